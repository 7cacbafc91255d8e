import { z } from 'zod';
import type { ProviderKindSchema } from '../../config/provider-kind-schema.js';

/**
 * The config settings of provider kind `gemini` (see src/config/provider-kind-schema.ts): how
 * image URLs are fetched for inlining, and its embeddings limits.
 */

/** How a provider adapter may fetch image URLs to inline them (Gemini needs inline data). */
export const imageFetchSchema = z
  .object({
    /** Largest image fetched, in bytes. */
    max_bytes: z.number().int().min(1).default(20 * 1024 * 1024),
    /** Whole fetch, in ms. */
    timeout_ms: z.number().int().min(1).default(10_000),
    /** Allow loopback, private and link-local addresses (off: prevents SSRF into your network). */
    allow_private_addresses: z.boolean().default(false),
    /** Most image URLs fetched for one request; more is a 400. */
    max_images_per_request: z.number().int().min(0).max(1000).default(16),
    /** Most bytes fetched for one request, all its images together. */
    max_total_bytes_per_request: z.number().int().min(1).default(32 * 1024 * 1024),
  })
  .strict();

export const geminiConfigSchema = {
  kind: 'gemini',
  providerFields: {
    image_fetch: imageFetchSchema.default({}),
  },
  endpointFields: {},
  requiresBaseUrl: false,
  /** `batchEmbedContents` embeds text only. */
  embeddingInputs: 'text',
  /** `batchEmbedContents` refuses more than 100 requests. */
  embeddingBatchLimit: 100,
} as const satisfies ProviderKindSchema<'gemini'>;
