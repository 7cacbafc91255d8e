import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `openai` (see src/config/provider-kind-schema.ts): its
 * server family (`dialect`) and the endpoint settings only OpenAI-compatible servers read.
 */

/** The OpenAI-compatible server families a provider's `dialect` names (rows of `DIALECTS` in dialects.ts). */
export const OPENAI_DIALECTS = ['openai', 'vllm', 'llamacpp', 'ollama', 'deepseek', 'groq', 'openrouter', 'mistral'] as const;

export const openaiConfigSchema = {
  kind: 'openai',
  providerFields: {
    /** Kind `openai` only: the server family, for its quirks (see docs/providers.md). */
    dialect: z.enum(OPENAI_DIALECTS).default('openai'),
  },
  endpointFields: {
    /** The upstream also serves OpenAI's Responses API (`POST /responses`) for this model (`openai` kind): `/v1/responses` goes through natively. */
    supports_responses: z.boolean().default(false),
    /**
     * Kind `openai`: send every text-only message content as one string (text parts joined in
     * order, blank line between) and refuse media parts, for servers that reject content arrays;
     * false sends arrays as given. Default: the dialect's setting (on for `deepseek` and `groq`;
     * `llamacpp` and `ollama` join text-only arrays and keep arrays with media).
     */
    string_content: z.boolean().optional(),
  },
  requiresBaseUrl: true,
  embeddingInputs: 'text-or-tokens',
  exclusiveEndpointFlags: {
    supports_responses: (kind: string) =>
      kind === 'azure'
        ? 'only "openai" endpoints take this setting: "azure" endpoints serve /v1/responses natively without it'
        : `only "openai" providers serve the Responses API natively (this one is "${kind}"; /v1/responses reaches it by translation without the setting)`,
  },
} as const satisfies ProviderKindSchema<'openai'>;
