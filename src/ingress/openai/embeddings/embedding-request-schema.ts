import { z } from 'zod';
import type { EmbeddingRequest } from '../../../core/embedding-types.js';
import { gatewayFields } from '../../gateway-fields.js';
import { firstIssueError, pickKnown, requireObject } from '../../validate.js';

/** The most inputs one request may carry (OpenAI's limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

const text = z.string().min(1, 'must not be empty');
const tokenArray = z.array(z.number().int().min(0)).min(1, 'must not be empty');

/**
 * The embeddings request schema: `input` as a string, an array of strings, an array of token
 * ids, or an array of token-id arrays.
 * @see https://platform.openai.com/docs/api-reference/embeddings/create
 */
export const embeddingRequestSchema = z
  .object({
    model: z.string({ required_error: 'is required' }).min(1, 'is required'),
    input: z.union(
      [
        text,
        z.array(text).min(1, 'must not be empty').max(MAX_EMBEDDING_INPUTS, `at most ${MAX_EMBEDDING_INPUTS} inputs per request`),
        tokenArray,
        z.array(tokenArray).min(1, 'must not be empty').max(MAX_EMBEDDING_INPUTS, `at most ${MAX_EMBEDDING_INPUTS} inputs per request`),
      ],
      { required_error: 'is required', invalid_type_error: 'must be a string, an array of strings, or token-id arrays' },
    ),
    dimensions: z.number().int().min(1).max(65_536).optional(),
    encoding_format: z.enum(['float', 'base64']).optional(),
    user: z.string().max(256).optional(),
    ...gatewayFields,
  })
  .passthrough();

/** A validated embeddings request, as the client sent it: `input` not yet made a list. */
export type EmbeddingsApiRequest = Omit<EmbeddingRequest, 'input'> & { input: string | string[] | number[] | number[][] };

const KNOWN_EMBEDDING_FIELDS = new Set(Object.keys(embeddingRequestSchema.shape));

/**
 * Validate an embeddings request body.
 * @throws GatewayError `invalid_request` with `param` set to the first offending field.
 */
export function parseEmbeddingRequest(body: unknown): EmbeddingsApiRequest {
  const result = embeddingRequestSchema.safeParse(requireObject(body));
  if (!result.success) throw firstIssueError(result.error.issues);
  return pickKnown<EmbeddingsApiRequest>(result.data, KNOWN_EMBEDDING_FIELDS);
}
