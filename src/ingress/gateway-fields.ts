import { z } from 'zod';

/**
 * The gateway fields (SPEC §2.1), accepted in the request body of every client API: `models`
 * (fallback models), `provider` (routing preferences), `op` (retention, tags, session).
 */

const slugList = z.array(z.string().min(1)).max(64);

const provider = z
  .object({
    order: slugList.optional(),
    allow_fallbacks: z.boolean().optional(),
    require_parameters: z.boolean().optional(),
    data_collection: z.enum(['allow', 'deny']).optional(),
    zdr: z.boolean().optional(),
    only: slugList.optional(),
    ignore: slugList.optional(),
    quantizations: slugList.optional(),
    sort: z.enum(['price', 'throughput', 'latency']).optional(),
    max_price: z
      .object({ prompt: z.number().min(0).optional(), completion: z.number().min(0).optional(), request: z.number().min(0).optional() })
      .strict()
      .optional(),
  })
  .strict();

const op = z
  .object({
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).optional(),
    tags: z.array(z.string().min(1).max(64)).max(16).optional(),
    session: z.string().min(1).max(128).optional(),
    /** Answer from the exact response cache when it holds this request, and store the answer (docs/observability.md). */
    cache: z.boolean().optional(),
    /** How long a stored answer lives, in seconds (bounded by `cache.max_ttl_s`). */
    cache_ttl: z.number().int().min(1).max(365 * 86_400).optional(),
  })
  .strict();

/** Spread into an API's request object schema. */
export const gatewayFields = {
  models: z.array(z.string().min(1)).max(16).optional(),
  provider: provider.optional(),
  op: op.optional(),
};
