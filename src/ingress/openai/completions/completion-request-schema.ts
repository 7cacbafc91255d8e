import { z } from 'zod';
import type { CompletionRequest } from '../../../core/chat-types.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import { firstIssueError, pickKnown, requireObject } from '../../validate.js';
import { nullable, openAICommonFields, tokens } from '../openai-request-fields.js';

/**
 * The legacy completion request schema (seed 000).
 * @see https://platform.openai.com/docs/api-reference/completions/create
 */

export const completionRequestSchema = z
  .object({
    ...openAICommonFields,
    prompt: z.union([z.string(), z.array(z.string()).min(1).max(1, 'only one prompt per request is supported')], {
      required_error: 'is required',
      invalid_type_error: 'must be a string (token-id prompts are not supported)',
    }),
    max_tokens: tokens,
    logprobs: nullable(z.number().int().min(0).max(5)),
    echo: nullable(z.boolean()),
    suffix: nullable(z.string()),
    best_of: nullable(z.number().int().min(0).max(20)),
  })
  .passthrough();

const KNOWN_COMPLETION_FIELDS = new Set(Object.keys(completionRequestSchema.shape));

/**
 * Validate a legacy completion request body.
 * @throws GatewayError `invalid_request` with `param` set to the first offending field.
 */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  const obj = requireObject(body);
  // Token-id prompts (`[1, 2]`, `[[1, 2]]`) name `prompt` itself, not the first array element.
  if (Array.isArray(obj.prompt) && obj.prompt.some((p) => typeof p === 'number' || Array.isArray(p))) {
    throw new GatewayError('invalid_request', 'prompt: must be a string (token-id prompts are not supported)', { param: 'prompt' });
  }
  const result = completionRequestSchema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  return pickKnown<CompletionRequest>(result.data, KNOWN_COMPLETION_FIELDS);
}
