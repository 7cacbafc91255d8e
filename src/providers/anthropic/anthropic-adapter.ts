import type { ProviderConfig } from '../../config/schema.js';
import type { ProviderAdapter } from '../types.js';

/** The adapter for provider kind `anthropic` (work in progress). */
export function createAnthropicAdapter(provider: ProviderConfig): ProviderAdapter {
  throw new Error(`provider kind "anthropic" (${provider.id}) is not implemented yet`);
}
