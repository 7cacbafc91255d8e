import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `local` (see src/config/provider-kind-schema.ts): the
 * built-in llama.cpp engine's settings.
 */

/**
 * Settings of the built-in llama.cpp engine (provider kind `local`, see src/providers/local/).
 * Each endpoint of a `local` provider runs one engine process with these settings.
 */
export const localEngineSchema = z
  .object({
    /** Generations run at once (llama.cpp sequences of one context, batched together). */
    parallel_sequences: z.number().int().min(1).max(64).default(2),
    /** Requests waiting for a free sequence; one more is refused with a retryable 503. */
    max_queue: z.number().int().min(0).max(100_000).default(16),
    /** Context window of each sequence, in tokens. */
    context_size: z.number().int().min(64).max(1_048_576).default(4096),
    /** Layers offloaded to a GPU: a number, "auto" or "max". 0 = CPU only. */
    gpu_layers: z.union([z.number().int().min(0), z.enum(['auto', 'max'])]).default(0),
    /** CPU threads per evaluation (0 = the engine's default: the machine's math cores). */
    threads: z.number().int().min(0).max(1024).default(0),
    /** Where `hf:` and URL model sources are downloaded to (once). Default ./data/models. */
    cache_dir: z.string().min(1).optional(),
    /** How long a request waits for a starting engine (model load, first download) before a retryable error, in ms. */
    load_wait_ms: z.number().int().min(0).default(120_000),
  })
  .strict();

/** A `local` provider's engine settings, defaults applied (see {@link localEngineSchema}). */
export type LocalEngineConfig = z.infer<typeof localEngineSchema>;

export const localConfigSchema = {
  kind: 'local',
  providerFields: {
    /** Kind `local` only: the llama.cpp engine's settings. */
    local: localEngineSchema.optional(),
  },
  endpointFields: {},
  requiresBaseUrl: false,
  /** The built-in engine is reached with a per-process token of its own, never a configured key. */
  refuseApiKeys: () => 'kind "local" (the built-in engine) takes no key: remove api_keys',
  /** The engine tokenizes strings, or takes token ids as given. */
  embeddingInputs: 'text-or-tokens',
} as const satisfies ProviderKindSchema<'local'>;
