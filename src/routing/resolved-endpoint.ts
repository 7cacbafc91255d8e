import type { ProviderTarget } from '../providers/types.js';
import type { ResolvedCredential } from './provider-credentials.js';

/**
 * One model served by one provider, resolved from config (routing/catalog.ts): what the router
 * plans with, and what an attempt hands its provider adapter. Routing owns the name; the shape
 * is the providers' {@link ProviderTarget} (providers sit below routing and name only that), so
 * a field the router alone needs is added here, not there.
 */
export type ResolvedEndpoint = ProviderTarget & {
  /**
   * The provider's `api_keys`, each with this endpoint as called with it (provider-credentials.ts);
   * unset for a provider with one `api_key` (or none), which is called as `provider` says.
   */
  readonly credentials?: readonly ResolvedCredential[] | undefined;
};
