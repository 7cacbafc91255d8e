import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { GatewayError } from '../../errors/gateway-error.js';
import type { Database } from '../../store/schema.js';
import { listTeams } from '../../store/teams.js';
import { claimValues, hasAdminRole, managesKeys, mapRoles, teamScope } from '../sso/roles.js';
import { clearCookie, registerCookieSupport, CSRF_HEADER, FLOW_COOKIE, FLOW_TTL_S, flowSchema, randomToken, sameToken, SESSION_COOKIE, sessionSchema, type Session } from '../sso/session-cookie.js';
import type { Sso } from '../sso/sso-auth.js';

/**
 * Single sign-on routes (OpenID Connect, `dashboard.oidc`; docs/governance.md):
 * - `GET /auth/login`: a new login (state, nonce, PKCE verifier in a signed 10-minute cookie), 302 to the provider;
 * - `GET /auth/callback`: the code exchanged and the ID token validated, the roles claim mapped,
 *   the session cookie set, 302 to the dashboard; an HTML page with the error code otherwise
 *   (403 `sso_no_role` when no claim value is mapped);
 * - `POST /auth/logout`: the session cookie cleared (CSRF token required while signed in); the
 *   answer names the provider's logout URL when it advertises one (RP-initiated logout);
 * - `GET /auth/me`: the signed-in user, roles, teams and CSRF token (`data`; null when not signed
 *   in, and always without single sign-on: `sso_enabled` false); 401 `session_invalid` for a bad cookie.
 * All are public to route auth: each checks the cookies itself.
 */
export function registerAuthRoutes(app: FastifyInstance, sso: Sso | undefined, db: Kysely<Database>): void {
  if (!sso) {
    // Without single sign-on the dashboard still asks, and learns it signs in with keys only.
    app.get('/auth/me', { config: { access: 'public' } }, async (_req, reply) => {
      reply.header('cache-control', 'no-store');
      return { data: null, sso_enabled: false };
    });
    return;
  }
  const { config, cookies, client } = sso;
  registerCookieSupport(app);
  const secureFor = (req: FastifyRequest) => req.protocol === 'https' || (config.redirect_url ?? '').startsWith('https:');
  const redirectUriOf = (req: FastifyRequest) => config.redirect_url ?? `${req.protocol}://${req.headers.host ?? 'localhost'}/auth/callback`;
  const open = { config: { access: 'public' as const } };

  app.get('/auth/login', open, async (req, reply) => {
    const flow = { state: randomToken(), nonce: randomToken(), verifier: randomToken(), redirect: redirectUriOf(req), exp: Math.floor(Date.now() / 1000) + FLOW_TTL_S };
    let url: URL;
    try {
      url = await client.authorizationUrl(flow.redirect, flow.state, flow.nonce, flow.verifier);
    } catch (err) {
      return errorPage(reply, asGatewayError(err));
    }
    cookies.set(reply, FLOW_COOKIE, flow, FLOW_TTL_S, secureFor(req));
    reply.header('cache-control', 'no-store');
    return reply.redirect(url.href, 302);
  });

  app.get('/auth/callback', open, async (req, reply) => {
    const secure = secureFor(req);
    const read = cookies.read(req, FLOW_COOKIE, flowSchema);
    clearCookie(reply, FLOW_COOKIE, secure);
    if (read.state !== 'valid') {
      const why = read.state === 'absent' ? 'no sign-in was started in this browser, or it took longer than 10 minutes' : `the sign-in cookie is not valid (${read.reason})`;
      return errorPage(reply, new GatewayError('sso_login_failed', `${why}; start again`));
    }
    const flow = read.value;
    const current = new URL(flow.redirect);
    current.search = new URL(req.url, 'http://x').search;
    let session: Session;
    try {
      const user = await client.finish(current, flow);
      const roles = mapRoles(user.claims, config);
      if (roles.length === 0) {
        const values = claimValues(user.claims, config.roles_claim);
        const carried = values.length === 0 ? `carries no "${config.roles_claim}" claim` : `has "${config.roles_claim}" ${values.map((v) => JSON.stringify(v)).join(', ')}, none of which`;
        throw new GatewayError('sso_no_role', `${displayName(user.claims, config.name_claim)} signed in, but the account ${carried}${values.length === 0 ? '' : ' is'} mapped to a role in dashboard.oidc.role_mapping; ask the gateway's operator for access`);
      }
      const now = Math.floor(Date.now() / 1000);
      const email = typeof user.claims.email === 'string' ? user.claims.email : null;
      session = { v: 1, sub: user.sub, name: displayName(user.claims, config.name_claim), email, roles, iat: now, exp: now + config.session_ttl_s, csrf: randomToken() };
    } catch (err) {
      return errorPage(reply, asGatewayError(err));
    }
    cookies.set(reply, SESSION_COOKIE, session, config.session_ttl_s, secure);
    reply.header('cache-control', 'no-store');
    return reply.redirect('/', 302);
  });

  app.post('/auth/logout', open, async (req, reply) => {
    const read = cookies.read(req, SESSION_COOKIE, sessionSchema);
    if (read.state === 'valid') {
      const token = req.headers[CSRF_HEADER];
      if (typeof token !== 'string' || !sameToken(token, read.value.csrf)) throw new GatewayError('csrf_token_invalid', `logout needs the session's CSRF token in the ${CSRF_HEADER} header`, { param: CSRF_HEADER });
    }
    clearCookie(reply, SESSION_COOKIE, secureFor(req));
    const back = config.post_logout_redirect_url ?? new URL('/', redirectUriOf(req)).href;
    return { data: { signed_out: true, end_session_url: await client.endSessionUrl(back) } };
  });

  app.get('/auth/me', open, async (req, reply) => {
    reply.header('cache-control', 'no-store');
    const read = cookies.read(req, SESSION_COOKIE, sessionSchema);
    if (read.state === 'absent') return { data: null, sso_enabled: true, login_url: '/auth/login' };
    if (read.state === 'invalid') throw new GatewayError('session_invalid', `the dashboard session cookie is not valid: ${read.reason}; sign in again at /auth/login`);
    const s = read.value;
    const scope = await teamScope(db, s);
    const names = new Map((await listTeams(db)).map((t) => [t.id, t.name]));
    const teams = [...scope.read].map((id) => ({ id, name: names.get(id) ?? id, role: scope.manage.has(id) ? 'team_admin' : 'viewer' }));
    return {
      sso_enabled: true,
      data: { sub: s.sub, name: s.name, email: s.email, roles: s.roles, is_admin: hasAdminRole(s), manages_keys: managesKeys(s), teams, csrf_token: s.csrf, expires_at: new Date(s.exp * 1000).toISOString() },
    };
  });
}

function displayName(claims: Record<string, unknown>, claim: string): string {
  for (const v of [claims[claim], claims.email, claims.preferred_username, claims.sub]) if (typeof v === 'string' && v !== '') return v.slice(0, 200);
  return 'unknown user';
}

function asGatewayError(err: unknown): GatewayError {
  return err instanceof GatewayError ? err : new GatewayError('sso_login_failed', `the sign-in could not be completed: ${(err as Error).message}`, { cause: err });
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small HTML page for the browser (the login routes are navigations, not API calls). */
function errorPage(reply: FastifyReply, err: GatewayError): FastifyReply {
  const title = err.code === 'sso_no_role' ? 'No access' : 'Sign-in failed';
  reply
    .code(err.status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
    .header('x-content-type-options', 'nosniff');
  return reply.send(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} · opinference</title><link rel="stylesheet" href="/assets/style.css"></head>` +
      `<body><main class="signin-wrap"><section class="card signin" id="sso-error" data-code="${escapeHtml(err.code)}"><h1>${title}</h1>` +
      `<p id="sso-error-message">${escapeHtml(err.message)}</p><p class="hint">Error code: <code>${escapeHtml(err.code)}</code></p>` +
      `<p><a class="btn" href="/auth/login">Try again</a> <a class="btn btn-ghost" href="/">Dashboard</a></p></section></main></body></html>`,
  );
}
