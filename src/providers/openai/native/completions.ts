import type { CompletionRequest } from '../../../core/chat-types.js';
import { clampOutputLimit } from '../../../core/output-limit.js';
import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { copySupported, OPENAI_SITE, type OpenAIWireSite } from '../convert-to-openai-request.js';

/**
 * The native lane legacy completions API → `openai` endpoint with `supports_text_completions`:
 * the client's prompt and the parameters the endpoint supports go to `POST {base_url}/completions`,
 * and the answer is read as a text completion (operation `text-completion`).
 * @see https://platform.openai.com/docs/api-reference/completions
 */

const COMPLETION_PARAMS: ReadonlyArray<readonly [string, string]> = [
  ['temperature', 'temperature'],
  ['top_p', 'top_p'],
  ['stop', 'stop'],
  ['presence_penalty', 'presence_penalty'],
  ['frequency_penalty', 'frequency_penalty'],
  ['logit_bias', 'logit_bias'],
  ['logprobs', 'logprobs'],
  ['seed', 'seed'],
  ['user', 'user'],
];

/**
 * Build the upstream body of a native legacy completion call (`POST /completions`).
 * `echo`, `suffix` and `best_of` are passed as given: only native endpoints take them;
 * `max_tokens` above the endpoint's `max_completion_tokens` (routing sends one only under
 * `output_limit: clamp`) is lowered to it, with a warning. `site`: where the call goes and how it
 * authenticates (default: kind `openai`'s).
 * @see https://platform.openai.com/docs/api-reference/completions/create
 */
export function convertToOpenAICompletionRequest(req: CompletionRequest, target: ProviderTarget, stream: boolean, site: OpenAIWireSite = OPENAI_SITE): UpstreamCall {
  const supported = target.endpoint.supported_parameters;
  const body: Record<string, unknown> = { model: site.model(target), prompt: req.prompt };
  const dropped = copySupported(req as unknown as Record<string, unknown>, body, supported, COMPLETION_PARAMS);
  for (const field of ['echo', 'suffix', 'best_of'] as const) if (req[field] != null) body[field] = req[field];
  const warnings: string[] = [];
  if (req.max_tokens != null) body.max_tokens = clampOutputLimit(req.max_tokens, target.endpoint.max_completion_tokens, 'max_tokens', warnings);
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { url: site.url(target, '/completions'), headers: site.headers(target), body: JSON.stringify(body), dropped, warnings };
}

/** The completions API's native lane of the `openai` kind (and of `local`, pointed at its engine). */
export const OPENAI_COMPLETIONS_LANE: NativeLane<CompletionRequest> = {
  native: true,
  operation: 'text-completion',
  requires: 'supports_text_completions',
  buildCall: (req, target, stream) => convertToOpenAICompletionRequest(req, target, stream),
};
