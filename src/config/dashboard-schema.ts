import { z } from 'zod';

/**
 * The `dashboard` section: single sign-on (OpenID Connect) for the dashboard and the admin API.
 * Read at start (a reload keeps the provider settings the gateway started with).
 * @see ../../docs/governance.md "Single sign-on"
 * @see https://openid.net/specs/openid-connect-core-1_0.html
 */

/** An environment variable's name (the secret itself never sits in the file). */
const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name (letters, digits, "_")');

/**
 * A role a claim value maps to: `admin` (what the admin key may do), `team_admin:<team>` (the
 * keys of that team, and its usage), `viewer:<team>` (that team's usage and requests, read only).
 * `<team>` is a team's name or id.
 */
export const ssoRole = z
  .string()
  .regex(/^(admin|team_admin:\S.{0,199}|viewer:\S.{0,199})$/, 'must be "admin", "team_admin:<team>" or "viewer:<team>" (a team name or id)');

export const oidcSchema = z
  .object({
    /** The provider's issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`). https, or http on a loopback address. */
    issuer: z.string().url().refine((u) => /^https:\/\//i.test(u) || /^http:\/\/(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?(\/|$)/i.test(u), 'must be an https URL (http only for localhost / 127.0.0.1)'),
    client_id: z.string().min(1).max(500),
    /** The variable holding the client secret; unset = a public client (PKCE only, no secret). */
    client_secret_env: envName.optional(),
    /** The callback URL registered at the provider; unset = `<scheme>://<Host header>/auth/callback` of the login request. */
    redirect_url: z.string().url().optional(),
    /** Where the provider sends the browser after logout; unset = the dashboard (`/` of the redirect URL's origin). */
    post_logout_redirect_url: z.string().url().optional(),
    /** Scopes asked for; `openid` is always included. */
    scopes: z.array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, 'must be a scope token')).default(['openid', 'profile', 'email']),
    /** The claim holding the user's groups or roles (a dotted path for nested claims, e.g. Keycloak's `realm_access.roles`); a string or a list of strings. */
    roles_claim: z.string().min(1).max(200).default('groups'),
    /** Claim value → roles. A user gets every role of every value they carry; none mapped = no access (403 at login). */
    role_mapping: z.record(z.string().min(1), z.union([ssoRole, z.array(ssoRole).min(1)])).refine((m) => Object.keys(m).length > 0, 'map at least one claim value to a role'),
    /** The claim shown as the user's name in the dashboard (falls back to `email`, then `sub`). */
    name_claim: z.string().min(1).max(200).default('name'),
    /** The variable holding the secret that signs session cookies (HMAC-SHA256, at least 32 characters). Required. */
    cookie_secret_env: envName.default('OP_SESSION_SECRET'),
    /** How long a session lasts after login, in seconds (the cookie's Max-Age and the signed expiry). */
    session_ttl_s: z.number().int().min(60).max(30 * 86_400).default(8 * 3600),
  })
  .strict();

export const dashboardSchema = z
  .object({
    /** Sign-in through an OpenID Connect provider (unset: the dashboard signs in with a key only). */
    oidc: oidcSchema.optional(),
  })
  .strict();

export type OidcConfig = z.infer<typeof oidcSchema>;
export type DashboardConfig = z.infer<typeof dashboardSchema>;
