import { providerKindSchemas } from '../config/provider-kind-schema.js';
import { anthropicConfigSchema } from './anthropic/anthropic-config-schema.js';
import { azureConfigSchema } from './azure/azure-config-schema.js';
import { bedrockConfigSchema } from './bedrock/bedrock-config-schema.js';
import { geminiConfigSchema } from './gemini/gemini-config-schema.js';
import { localConfigSchema } from './local/local-config-schema.js';
import { openaiConfigSchema } from './openai/openai-config-schema.js';
import { vertexConfigSchema } from './vertex/vertex-config-schema.js';

/**
 * Every provider kind's config schema, by kind: one line per kind (the order is the order of
 * the `kind` enum in error messages). src/config/schema.ts assembles the config from it;
 * `registry.ts` must cover the same kinds (its `ADAPTERS` table `satisfies Record<ProviderKind, …>`).
 * Like the files it lists, this file imports only `zod` and src/config/ fragments
 * (eslint.config.js).
 */
export const PROVIDER_CONFIG_SCHEMAS = providerKindSchemas({
  openai: openaiConfigSchema,
  anthropic: anthropicConfigSchema,
  gemini: geminiConfigSchema,
  local: localConfigSchema,
  azure: azureConfigSchema,
  vertex: vertexConfigSchema,
  bedrock: bedrockConfigSchema,
});
