import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `anthropic` (see src/config/provider-kind-schema.ts):
 * none of its own yet; it serves no embeddings, and caches prompts only where marked.
 */
export const anthropicConfigSchema = {
  kind: 'anthropic',
  providerFields: {},
  endpointFields: {},
  requiresBaseUrl: false,
  embeddingInputs: null,
  /** Anthropic caches only the prefixes a request marks with `cache_control`. */
  explicitPromptCaching: true,
} as const satisfies ProviderKindSchema<'anthropic'>;
