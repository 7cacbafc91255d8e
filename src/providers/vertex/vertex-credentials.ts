import type { GoogleAuth } from 'google-auth-library';
import { GatewayError } from '../../errors/gateway-error.js';
import { redactSecrets } from '../upstream-errors.js';

/** The OAuth scope every Vertex AI call needs. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** How a Vertex provider obtains its bearer: a credentials file, or Application Default Credentials. */
export interface VertexCredentialSettings {
  /** A Google credentials JSON file (service account, external_account, authorized_user); unset: ADC. */
  readonly key_file?: string | undefined;
  /** Sent as `x-goog-user-project` when set. */
  readonly quota_project?: string | undefined;
}

/** The provider's Google credential: the auth headers of one call, from the library's cached token. */
export interface VertexCredentials {
  /**
   * `authorization: Bearer <token>` (and `x-goog-user-project` when configured). The token is
   * the library's cached one, refreshed by it before expiry (5 minutes early by default).
   * @throws GatewayError `upstream_auth_failed` when no token can be obtained; its message names
   *   the credential source and the library's reason, secrets redacted.
   */
  headers(): Promise<Record<string, string>>;
  /** Where the token comes from, for messages: `key_file <path>` or `application default credentials`. */
  readonly source: string;
}

/**
 * Build a provider's credential ONCE (the adapter factory runs once per provider id, so the
 * library's token cache lives as long as the provider): a `GoogleAuth` with scope
 * cloud-platform over the key file, or over Application Default Credentials
 * (`GOOGLE_APPLICATION_CREDENTIALS`, then gcloud's `application_default_credentials.json`, then
 * the GCE/GKE metadata server). Nothing is fetched until the first call, and the library itself
 * is loaded on the first call (about 14 MB of RSS a gateway without a vertex provider never
 * pays). A token or key never appears in an error or a log line.
 * @see https://cloud.google.com/docs/authentication/application-default-credentials
 */
export function createVertexCredentials(providerId: string, settings: VertexCredentialSettings): VertexCredentials {
  let auth: Promise<GoogleAuth> | undefined;
  const loadAuth = (): Promise<GoogleAuth> =>
    (auth ??= import('google-auth-library').then((m) => new m.GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE], ...(settings.key_file ? { keyFilename: settings.key_file } : {}) })));
  const source = settings.key_file ? `key_file ${settings.key_file}` : 'application default credentials';
  return {
    source,
    async headers() {
      let token: string | null | undefined;
      try {
        token = await (await loadAuth()).getAccessToken();
      } catch (err) {
        throw tokenError(providerId, source, err instanceof Error ? err.message : String(err));
      }
      if (!token) throw tokenError(providerId, source, 'the library returned no access token');
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (settings.quota_project) headers['x-goog-user-project'] = settings.quota_project;
      return headers;
    },
  };
}

/** A failure to obtain a token: `upstream_auth_failed` (the attempt fails over like a 401), secrets redacted. */
export function tokenError(providerId: string, source: string, reason: string): GatewayError {
  const message = `could not obtain a Google access token from ${source}: ${redactSecrets(reason).slice(0, 500)}`;
  return new GatewayError('upstream_auth_failed', message, { metadata: { provider_name: providerId, credential_source: source } });
}
