import type { ProviderConfig, ProviderKind } from '../config/schema.js';
import { createAnthropicAdapter } from './anthropic/anthropic-adapter.js';
import { createAzureAdapter } from './azure/azure-adapter.js';
import { createBedrockAdapter } from './bedrock/bedrock-adapter.js';
import { createGeminiAdapter } from './gemini/gemini-adapter.js';
import { createLocalAdapter } from './local/local-adapter.js';
import { createOpenAIAdapter } from './openai/openai-adapter.js';
import { createVertexAdapter } from './vertex/vertex-adapter.js';
import type { ProviderAdapter } from './types.js';
import { withClientSafeErrors } from './client-safe-adapter.js';

/**
 * The adapter factory of each provider kind: one line per kind. The kinds are those of
 * `config-schemas.ts` (the config's `ProviderKind`): the `satisfies` makes a kind listed there
 * and missing here, or listed here only, a type error. Two lists, because config/ (which reads
 * config-schemas.ts) must not import the adapters and all they import.
 */
const ADAPTERS = {
  openai: (provider) => createOpenAIAdapter(provider.id),
  anthropic: createAnthropicAdapter,
  gemini: createGeminiAdapter,
  local: createLocalAdapter,
  azure: (provider) => createAzureAdapter(provider),
  vertex: createVertexAdapter,
  bedrock: createBedrockAdapter,
} as const satisfies Record<ProviderKind, (provider: ProviderConfig) => ProviderAdapter>;

/** The adapter for a provider, by kind, with client-safe errors (secrets redacted, see client-safe-adapter.ts). */
export function adapterFor(provider: ProviderConfig): ProviderAdapter {
  return withClientSafeErrors(ADAPTERS[provider.kind](provider), provider);
}
