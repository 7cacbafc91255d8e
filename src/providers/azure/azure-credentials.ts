import type { TokenCredential, TokenCredentialOptions } from '@azure/identity';
import type { ProviderConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { redactAndTruncate } from '../upstream-errors.js';
import type { EntraConfig } from './azure-config-schema.js';

/**
 * How an `azure` provider authenticates: the request headers its calls carry, awaited per call.
 * `api-key: <key>` with a key; `Authorization: Bearer <token>` with Entra ID, the token from an
 * `@azure/identity` credential built ONCE per provider (the adapter factory runs once per
 * provider id), so its cache lives as long as the provider: `getBearerTokenProvider` hands out
 * the cached token and refreshes it from 2 minutes before expiry (blocking only in its last
 * second), so the hot path awaits a resolved promise. Tokens and secrets are never logged.
 */
export interface AzureAuth {
  /** Where credentials come from, for messages (`api_key`, `entra client_secret` …); never a secret. */
  readonly source: string;
  /**
   * The auth header of one call. `target`: the endpoint as called; with `api_key` auth its
   * provider's key is sent, so each view of a provider's `api_keys` (routing/provider-credentials.ts)
   * sends its own key (one header object per view, made on its first call). Entra ID ignores it.
   * @throws GatewayError `upstream_auth_failed` when no token can be obtained: the message names
   *   the scope, the credential source and the library's reason (secrets redacted, cut to 600
   *   characters; no provider-id prefix, the id is in `metadata.provider_name`, as for every
   *   client-safe upstream error); the attempt fails over to the next endpoint.
   */
  headers(target?: { readonly provider: Pick<ProviderConfig, 'api_key'> }): Promise<Record<string, string>>;
}

/** Longest library reason quoted in an `upstream_auth_failed` message, in characters. */
const MAX_REASON = 600;

/** The `@azure/identity` module, loaded by the first Entra ID call (about 26 MB of RSS a gateway without Entra ID never pays). */
type AzureIdentity = typeof import('@azure/identity');

/** The `@azure/identity` credential an `entra` block names (see azure-config-schema.ts `entraSchema`). */
function buildEntraCredential(lib: AzureIdentity, entra: EntraConfig, extra: TokenCredentialOptions): TokenCredential {
  const { ClientCertificateCredential, ClientSecretCredential, DefaultAzureCredential, ManagedIdentityCredential, WorkloadIdentityCredential } = lib;
  const common = {
    ...extra,
    ...(entra.authority_host !== undefined ? { authorityHost: entra.authority_host } : {}),
    ...(entra.disable_instance_discovery !== undefined ? { disableInstanceDiscovery: entra.disable_instance_discovery } : {}),
  };
  switch (entra.credential) {
    case 'client_secret':
      return new ClientSecretCredential(entra.tenant_id!, entra.client_id!, entra.client_secret!, common);
    case 'certificate':
      return new ClientCertificateCredential(
        entra.tenant_id!,
        entra.client_id!,
        { certificatePath: entra.certificate_path!, ...(entra.certificate_password !== undefined ? { certificatePassword: entra.certificate_password } : {}) },
        common,
      );
    case 'managed_identity':
      return entra.client_id !== undefined ? new ManagedIdentityCredential({ ...extra, clientId: entra.client_id }) : new ManagedIdentityCredential(extra);
    case 'workload_identity':
      return new WorkloadIdentityCredential({
        ...common,
        ...(entra.tenant_id !== undefined ? { tenantId: entra.tenant_id } : {}),
        ...(entra.client_id !== undefined ? { clientId: entra.client_id } : {}),
        ...(entra.federated_token_file !== undefined ? { tokenFilePath: entra.federated_token_file } : {}),
      });
    case 'default':
      return new DefaultAzureCredential({
        ...common,
        ...(entra.tenant_id !== undefined ? { tenantId: entra.tenant_id } : {}),
        ...(entra.client_id !== undefined ? { managedIdentityClientId: entra.client_id, workloadIdentityClientId: entra.client_id } : {}),
      });
  }
}

/** Where an `entra` block's token comes from, for messages: `entra client_secret (tenant …, client …)`. */
export function entraSource(entra: EntraConfig): string {
  const ids = [entra.tenant_id !== undefined ? `tenant ${entra.tenant_id}` : '', entra.client_id !== undefined ? `client ${entra.client_id}` : ''].filter((s) => s !== '');
  return `entra ${entra.credential}${ids.length ? ` (${ids.join(', ')})` : ''}`;
}

/**
 * The auth of an `azure` provider: Entra ID when it has an `entra` block (its `api_key` is then
 * not sent), else its `api_key` as the `api-key` header (none when it has no key). `extra`:
 * options merged into the `@azure/identity` credential's (e.g. an `httpClient`).
 */
export function createAzureAuth(provider: Pick<ProviderConfig, 'id' | 'api_key'> & { entra?: EntraConfig | undefined }, extra: TokenCredentialOptions = {}): AzureAuth {
  const entra = provider.entra;
  if (entra === undefined) {
    const headers: Record<string, string> = provider.api_key ? { 'api-key': provider.api_key } : {};
    const ready = Promise.resolve(headers);
    const perKey = new WeakMap<object, Promise<Record<string, string>>>();
    return {
      source: 'api_key',
      headers: (target) => {
        const p = target?.provider;
        if (p === undefined || p.api_key === provider.api_key) return ready;
        const known = perKey.get(p);
        if (known !== undefined) return known;
        const own: Record<string, string> = p.api_key ? { 'api-key': p.api_key } : {};
        const made = Promise.resolve(own);
        perKey.set(p, made);
        return made;
      },
    };
  }
  const source = entraSource(entra);
  const secrets = [entra.client_secret, entra.certificate_password].filter((s): s is string => typeof s === 'string' && s !== '');
  // The library and the credential are made on the first call, once; the token provider keeps
  // its cache from then on.
  let token: Promise<() => Promise<string>> | undefined;
  const tokenProvider = (): Promise<() => Promise<string>> =>
    (token ??= import('@azure/identity').then((lib) => lib.getBearerTokenProvider(buildEntraCredential(lib, entra, extra), entra.scope)));
  return {
    source,
    async headers() {
      try {
        return { authorization: `Bearer ${await (await tokenProvider())()}` };
      } catch (err) {
        const reason = redactAndTruncate(String((err as Error)?.message ?? err).replace(/\s+/g, ' ').trim(), secrets, MAX_REASON);
        throw new GatewayError('upstream_auth_failed', `could not obtain an Entra ID token for scope ${entra.scope} from ${source}: ${reason}`, {
          metadata: { provider_name: provider.id, credential_source: source },
        });
      }
    },
  };
}
