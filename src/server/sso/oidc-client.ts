import * as oidc from 'openid-client';
import type { OidcConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';

/**
 * The relying party of the dashboard's single sign-on, on `openid-client`: discovery (once,
 * retried after a failure), the authorization code flow with PKCE (S256), state and nonce,
 * the token exchange with ID token validation (signature, issuer, audience, expiry, nonce),
 * userinfo for claims the ID token lacks, and RP-initiated logout when the provider has an
 * `end_session_endpoint`.
 * @see https://github.com/panva/openid-client
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html
 */

/** Whether the issuer is on a loopback address (then plain http is allowed: tests, local providers). */
const isLoopback = (url: URL): boolean => url.protocol === 'http:' && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(url.hostname);

/** What the callback learned about the user. */
export interface SignedInUser {
  sub: string;
  /** The ID token's claims, with userinfo's added where the ID token had none. */
  claims: Record<string, unknown>;
}

export class OidcClient {
  private discovered: Promise<oidc.Configuration> | undefined;

  constructor(
    private readonly config: OidcConfig,
    private readonly clientSecret: string | undefined,
  ) {}

  /**
   * The provider's configuration (discovered once; a failed discovery is tried again next time).
   * @throws GatewayError `sso_provider_unavailable` (502) when the discovery document cannot be read.
   */
  async provider(): Promise<oidc.Configuration> {
    this.discovered ??= (async () => {
      const issuer = new URL(this.config.issuer);
      const auth = this.clientSecret === undefined ? oidc.None() : oidc.ClientSecretPost(this.clientSecret);
      return oidc.discovery(issuer, this.config.client_id, undefined, auth, isLoopback(issuer) ? { execute: [oidc.allowInsecureRequests] } : undefined);
    })();
    try {
      return await this.discovered;
    } catch (err) {
      this.discovered = undefined;
      throw new GatewayError('sso_provider_unavailable', `the identity provider ${this.config.issuer} could not be reached or is not an OpenID provider: ${(err as Error).message}`, { cause: err });
    }
  }

  /** The provider's authorization URL for a new login (PKCE S256 challenge of `verifier`). */
  async authorizationUrl(redirectUri: string, state: string, nonce: string, verifier: string): Promise<URL> {
    const provider = await this.provider();
    const scopes = new Set(['openid', ...this.config.scopes]);
    return oidc.buildAuthorizationUrl(provider, {
      redirect_uri: redirectUri,
      scope: [...scopes].join(' '),
      response_type: 'code',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
  }

  /**
   * Finish a login: exchange the code of `currentUrl` (the callback URL as the browser called
   * it) and validate the ID token.
   * @throws GatewayError `sso_login_failed` (400: the provider answered with an error, the
   * state does not match, the ID token is invalid) or `sso_provider_unavailable` (502).
   */
  async finish(currentUrl: URL, checks: { state: string; nonce: string; verifier: string }): Promise<SignedInUser> {
    const provider = await this.provider();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(provider, currentUrl, { pkceCodeVerifier: checks.verifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true });
    } catch (err) {
      const e = err as { error?: string; error_description?: string; message?: string; code?: string };
      const detail = e.error ? `${e.error}${e.error_description ? `: ${e.error_description}` : ''}` : (e.message ?? String(err));
      const unreachable = e.code === 'OAUTH_RESPONSE_IS_NOT_CONFORM' || /fetch failed|ECONNREFUSED|timeout/i.test(e.message ?? '');
      throw new GatewayError(unreachable ? 'sso_provider_unavailable' : 'sso_login_failed', `the sign-in could not be completed: ${detail}`, { cause: err });
    }
    const idClaims = tokens.claims();
    if (!idClaims) throw new GatewayError('sso_login_failed', 'the identity provider sent no ID token');
    const claims: Record<string, unknown> = { ...idClaims };
    // Providers often put groups or profile claims in userinfo only; the ID token's own win.
    if (provider.serverMetadata().userinfo_endpoint && tokens.access_token) {
      try {
        const info = await oidc.fetchUserInfo(provider, tokens.access_token, idClaims.sub);
        for (const [k, v] of Object.entries(info)) if (!(k in claims)) claims[k] = v;
      } catch {
        // userinfo is a supplement: the ID token alone still signs the user in
      }
    }
    return { sub: idClaims.sub, claims };
  }

  /** The provider's logout URL (RP-initiated logout), or null when it advertises none. */
  async endSessionUrl(postLogoutRedirect: string): Promise<string | null> {
    let provider: oidc.Configuration;
    try {
      provider = await this.provider();
    } catch {
      return null;
    }
    if (!provider.serverMetadata().end_session_endpoint) return null;
    return oidc.buildEndSessionUrl(provider, { client_id: this.config.client_id, post_logout_redirect_uri: postLogoutRedirect }).href;
  }
}
