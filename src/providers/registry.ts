import type { ProviderConfig } from '../config/schema.js';
import { createAnthropicAdapter } from './anthropic/anthropic-adapter.js';
import { createGeminiAdapter } from './gemini/gemini-adapter.js';
import { createLocalAdapter } from './local/local-adapter.js';
import { createOpenAIAdapter } from './openai/openai-adapter.js';
import type { ProviderAdapter } from './types.js';
import { withClientSafeErrors } from './client-safe-adapter.js';

/** The adapter for a provider, by kind, with client-safe errors (secrets redacted, see client-safe-adapter.ts). */
export function adapterFor(provider: ProviderConfig): ProviderAdapter {
  return withClientSafeErrors(adapterOfKind(provider), provider);
}

function adapterOfKind(provider: ProviderConfig): ProviderAdapter {
  switch (provider.kind) {
    case 'openai':
      return createOpenAIAdapter(provider.id);
    case 'anthropic':
      return createAnthropicAdapter(provider);
    case 'gemini':
      return createGeminiAdapter(provider);
    case 'local':
      return createLocalAdapter(provider);
  }
}
