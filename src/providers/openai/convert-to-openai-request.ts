import type { ChatMessage, ChatRequest, CompletionRequest } from '../../api/chat-types.js';
import { requestedOutputLimit } from '../../api/request-schemas.js';
import type { ResolvedEndpoint } from '../types.js';

/**
 * Optional request fields and the `supported_parameters` name that allows each. A field whose
 * name the endpoint does not list is dropped (SPEC §2.1).
 */
const OPTIONAL_PARAMS: ReadonlyArray<readonly [keyof ChatRequest & string, string]> = [
  ['temperature', 'temperature'],
  ['top_p', 'top_p'],
  ['top_k', 'top_k'],
  ['min_p', 'min_p'],
  ['stop', 'stop'],
  ['presence_penalty', 'presence_penalty'],
  ['frequency_penalty', 'frequency_penalty'],
  ['repetition_penalty', 'repetition_penalty'],
  ['logit_bias', 'logit_bias'],
  ['logprobs', 'logprobs'],
  ['top_logprobs', 'top_logprobs'],
  ['seed', 'seed'],
  ['tools', 'tools'],
  ['tool_choice', 'tool_choice'],
  ['parallel_tool_calls', 'parallel_tool_calls'],
  ['response_format', 'response_format'],
  ['reasoning', 'reasoning'],
  ['reasoning_effort', 'reasoning_effort'],
  ['user', 'user'],
];

/** Messages as OpenAI-compatible servers expect them: our `reasoning` echo fields are not sent. */
function toWireMessages(messages: ChatMessage[]): unknown[] {
  return messages.map((m) => {
    if (m.role === 'assistant' && (m.reasoning !== undefined || m.reasoning_details !== undefined)) {
      const { reasoning: _r, reasoning_details: _d, ...rest } = m;
      return rest;
    }
    return m;
  });
}

function headersFor(target: ResolvedEndpoint): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (target.provider.api_key) headers.authorization = `Bearer ${target.provider.api_key}`;
  for (const [k, v] of Object.entries(target.provider.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

function urlFor(target: ResolvedEndpoint, path: string): string {
  return `${(target.provider.base_url ?? '').replace(/\/+$/, '')}${path}`;
}

/** Copy the optional fields the endpoint supports; return the names dropped. */
function copySupported(req: Record<string, unknown>, body: Record<string, unknown>, supported: readonly string[], pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const dropped: string[] = [];
  for (const [field, param] of pairs) {
    const value = req[field];
    if (value === undefined || value === null) continue;
    if (supported.includes(param)) body[field] = value;
    else dropped.push(field);
  }
  return dropped;
}

/** Put the output limit in the field the endpoint takes (`max_completion_tokens` preferred). */
function setOutputLimit(body: Record<string, unknown>, limit: number | undefined, supported: readonly string[]): void {
  if (limit === undefined) return;
  if (supported.includes('max_completion_tokens') || !supported.includes('max_tokens')) body.max_completion_tokens = limit;
  else body.max_tokens = limit;
}

/**
 * Build the upstream body of an OpenAI-compatible chat call. Streams always ask for usage
 * (`stream_options.include_usage`), whatever the client asked.
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */
export function convertToOpenAIChatRequest(req: ChatRequest, target: ResolvedEndpoint, stream: boolean) {
  const supported = target.endpoint.supported_parameters;
  const body: Record<string, unknown> = { model: target.endpoint.upstream_model, messages: toWireMessages(req.messages) };
  const dropped = copySupported(req as unknown as Record<string, unknown>, body, supported, OPTIONAL_PARAMS);
  setOutputLimit(body, requestedOutputLimit(req), supported);
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { url: urlFor(target, '/chat/completions'), headers: headersFor(target), body: JSON.stringify(body), dropped };
}

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
 * `echo`, `suffix` and `best_of` are passed as given: only native endpoints take them.
 * @see https://platform.openai.com/docs/api-reference/completions/create
 */
export function convertToOpenAICompletionRequest(req: CompletionRequest, target: ResolvedEndpoint, stream: boolean) {
  const supported = target.endpoint.supported_parameters;
  const body: Record<string, unknown> = { model: target.endpoint.upstream_model, prompt: req.prompt };
  const dropped = copySupported(req as unknown as Record<string, unknown>, body, supported, COMPLETION_PARAMS);
  for (const field of ['echo', 'suffix', 'best_of'] as const) if (req[field] != null) body[field] = req[field];
  if (req.max_tokens != null) body.max_tokens = req.max_tokens;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { url: urlFor(target, '/completions'), headers: headersFor(target), body: JSON.stringify(body), dropped };
}
