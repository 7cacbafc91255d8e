import type { FastifyRequest } from 'fastify';
import { ConfigError } from '../../config/load.js';
import type { OidcConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { keySettingsSchema } from '../../store/key-settings.js';
import type { ApiKey } from '../../store/keys.js';
import { OidcClient } from './oidc-client.js';
import { hasAdminRole } from './roles.js';
import { CSRF_HEADER, MIN_SECRET_LENGTH, sameToken, SESSION_COOKIE, sessionSchema, SignedCookies, type Session } from './session-cookie.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A signed-in user with only team roles (`team_admin:<team>`, `viewer:<team>`) may call this
     * route; the handler narrows it to the user's teams (see sso/roles.ts `teamScope`). Without
     * it, only the `admin` role's sessions (and keys) get past route auth.
     */
    teamRoles?: boolean;
  }
  interface FastifyRequest {
    /** The dashboard session that authenticated the request (single sign-on), or null. */
    ssoSession: Session | null;
  }
}

/** Methods that change nothing: no CSRF token needed. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The single sign-on of a running gateway: its settings, cookie signer and OpenID client. */
export interface Sso {
  config: OidcConfig;
  cookies: SignedCookies;
  client: OidcClient;
  /**
   * The key a request's session cookie stands for (the admin role: the admin key's powers;
   * team roles: a key of no team that the team-role routes narrow), or undefined without a
   * session cookie. Sets `req.ssoSession`.
   * @throws GatewayError `session_invalid` (401), `csrf_token_invalid` (403) on a state-changing
   * method without the session's token in `x-csrf-token`, `role_forbidden` (403) for team roles
   * on a route without `teamRoles`.
   */
  authenticate(req: FastifyRequest): ApiKey | undefined;
}

/**
 * Build the single sign-on from `dashboard.oidc` and the environment, or undefined when it is
 * not configured.
 * @throws ConfigError when the cookie secret's variable is unset or too short, or the client
 * secret's variable is named but unset.
 */
export function buildSso(config: OidcConfig | undefined, env: NodeJS.ProcessEnv = process.env): Sso | undefined {
  if (!config) return undefined;
  const issues: string[] = [];
  const cookieSecret = env[config.cookie_secret_env];
  if (!cookieSecret) issues.push(`dashboard.oidc.cookie_secret_env: the variable ${config.cookie_secret_env} is not set; it signs the dashboard's session cookies (set it to a random string of at least ${MIN_SECRET_LENGTH} characters, e.g. \`openssl rand -base64 48\`, the same on every replica)`);
  else if (cookieSecret.length < MIN_SECRET_LENGTH) issues.push(`dashboard.oidc.cookie_secret_env: ${config.cookie_secret_env} is ${cookieSecret.length} characters; it must be at least ${MIN_SECRET_LENGTH}`);
  const clientSecret = config.client_secret_env === undefined ? undefined : env[config.client_secret_env];
  if (config.client_secret_env !== undefined && !clientSecret) issues.push(`dashboard.oidc.client_secret_env: the variable ${config.client_secret_env} is not set (the client secret the provider issued; leave client_secret_env out for a public client)`);
  if (issues.length > 0) throw new ConfigError('the environment (dashboard.oidc)', issues);
  const cookies = new SignedCookies(cookieSecret!);
  const client = new OidcClient(config, clientSecret);
  return {
    config,
    cookies,
    client,
    authenticate(req) {
      const read = cookies.read(req, SESSION_COOKIE, sessionSchema);
      if (read.state === 'absent') return undefined;
      if (read.state === 'invalid') throw new GatewayError('session_invalid', `the dashboard session cookie is not valid: ${read.reason}; sign in again at /auth/login`);
      const session = read.value;
      if (!SAFE_METHODS.has(req.method)) {
        const token = req.headers[CSRF_HEADER];
        if (typeof token !== 'string' || !sameToken(token, session.csrf)) {
          throw new GatewayError('csrf_token_invalid', `${req.method} with the session cookie needs the session's CSRF token in the ${CSRF_HEADER} header (csrf_token of GET /auth/me)`, { param: CSRF_HEADER });
        }
      }
      const admin = hasAdminRole(session);
      if (!admin && req.routeOptions.config.teamRoles !== true) {
        throw new GatewayError('role_forbidden', `${session.name} (roles ${session.roles.join(', ')}) may not call ${req.method} ${req.routeOptions.url ?? req.url.split('?')[0]}: it needs the admin role`);
      }
      req.ssoSession = session;
      return sessionKey(session, admin);
    },
  };
}

/** The key a session acts as: the admin key's powers for `admin`, else a key of no team, no spend. */
function sessionKey(session: Session, admin: boolean): ApiKey {
  return {
    id: admin ? 'admin' : `user:${session.sub}`,
    name: session.name,
    prefix: 'sso',
    disabled: false,
    createdAt: session.iat * 1000,
    expiresAt: session.exp * 1000,
    isAdmin: admin,
    settings: keySettingsSchema.parse({}),
    team: null,
  };
}
