import { z } from 'zod';
import { gatewayFields } from '../gateway-fields.js';

/** Request fields that chat and legacy completions share (OpenAI), the gateway fields included. */

export const nullable = <T extends z.ZodTypeAny>(t: T) => t.nullable().optional();

const stop = nullable(
  z.union([z.string(), z.array(z.string()).max(4, 'at most 4 stop sequences are allowed')]),
);

/** An output limit in tokens. */
export const tokens = nullable(z.number().int().min(1).max(100_000_000, 'must be at most 100000000'));

/** Spread into the chat and completion request schemas. */
export const openAICommonFields = {
  model: z.string({ required_error: 'is required' }).min(1, 'is required'),
  stream: nullable(z.boolean()),
  stream_options: nullable(z.object({ include_usage: z.boolean().optional() }).passthrough()),
  temperature: nullable(z.number().min(0).max(2)),
  top_p: nullable(z.number().min(0).max(1)),
  n: nullable(z.number().int().min(1).max(1, 'only n = 1 is supported')),
  stop,
  presence_penalty: nullable(z.number().min(-2).max(2)),
  frequency_penalty: nullable(z.number().min(-2).max(2)),
  logit_bias: nullable(z.record(z.number().int().min(-100).max(100))),
  seed: nullable(z.number().int().refine(Number.isSafeInteger, 'must be a safe integer (|seed| ≤ 2^53 - 1)')),
  user: z.string().max(256).optional(),
  ...gatewayFields,
};
