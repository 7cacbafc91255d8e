import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `anthropic` (see src/config/provider-kind-schema.ts):
 * none of its own yet; it serves no embeddings.
 */
export const anthropicConfigSchema = {
  kind: 'anthropic',
  providerFields: {},
  endpointFields: {},
  requiresBaseUrl: false,
  embeddingInputs: null,
} as const satisfies ProviderKindSchema<'anthropic'>;
