import type { ProviderConfig } from '../config/schema.js';
import { createOpenAIAdapter } from './openai/openai-adapter.js';
import type { ProviderAdapter } from './types.js';

/**
 * The adapter for a provider, by kind. Config validation refuses kinds this version does not
 * serve, so reaching the default branch is a bug.
 */
export function adapterFor(provider: ProviderConfig): ProviderAdapter {
  switch (provider.kind) {
    case 'openai':
      return createOpenAIAdapter(provider.id);
    case 'anthropic':
    case 'gemini':
    case 'local':
      throw new Error(`provider kind "${provider.kind}" is not implemented yet`);
  }
}
