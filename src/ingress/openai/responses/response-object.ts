import type { FinishReason, ReasoningDetail, ToolCall, Usage } from '../../../core/chat-types.js';
import type { ChatResult } from '../../../core/chat-result.js';
import { totalTokens } from '../../../core/usage-arithmetic.js';
import type { GatewayError } from '../../../errors/gateway-error.js';
import type { ResponseIdentity } from '../../types.js';
import { encodeReasoningState } from './reasoning-state.js';
import { functionToolsOf, type ResponsesFunctionTool, type ResponsesRequest } from './response-request-schema.js';

/**
 * The Responses API object and its output items, shared by the response body, the stream
 * encoder and the stored copy. Item ids derive from the response id and the item's position
 * (`msg_…_0`, `fc_…_1`, `rs_…_2`), so they are distinct from each other and from the response id.
 * @see https://platform.openai.com/docs/api-reference/responses/object
 */

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

/** Usage in the Responses shape (`cost`: USD, an extension field). Unreported details read 0. */
export function responsesUsage(usage: Usage | null, costUsd?: number): Record<string, unknown> {
  const input = usage?.promptTokens ?? 0;
  const output = usage?.completionTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage?.cachedTokens ?? 0, cache_write_tokens: usage?.cacheWriteTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: usage?.reasoningTokens ?? 0 },
    total_tokens: totalTokens(usage),
    ...(costUsd !== undefined ? { cost: costUsd } : {}),
  };
}

/** The id of the output item at `index`; `prefix` is `msg`, `fc` or `rs`. */
export function itemId(responseId: string, prefix: 'msg' | 'fc' | 'rs', index: number): string {
  return `${prefix}_${responseId.replace(/^gen_/, '')}_${index}`;
}

export function messageItem(id: string, status: 'in_progress' | 'completed' | 'incomplete', content: Record<string, unknown>[]): Record<string, unknown> {
  return { id, type: 'message', status, role: 'assistant', content };
}

export const outputTextPart = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });
export const refusalPart = (refusal: string) => ({ type: 'refusal', refusal });

/** A function call item; `namespace` when the function was declared inside a namespace tool. */
export function functionCallItem(id: string, status: 'in_progress' | 'completed' | 'incomplete', call: { id: string; name: string; arguments: string }, namespace?: string): Record<string, unknown> {
  return { id, type: 'function_call', status, call_id: call.id, ...(namespace !== undefined ? { namespace } : {}), name: call.name, arguments: call.arguments };
}

/** The namespace each declared function belongs to (functions of namespace tools only). */
export function namespacesOf(req: ResponsesRequest): Map<string, string> {
  const map = new Map<string, string>();
  for (const f of functionToolsOf(req.tools)) if (f.namespace !== undefined) map.set(f.tool.name, f.namespace);
  return map;
}

export function reasoningItem(id: string, status: 'in_progress' | 'completed' | 'incomplete', summary: string[], details: readonly ReasoningDetail[]): Record<string, unknown> {
  const item: Record<string, unknown> = { id, type: 'reasoning', status, summary: summary.map((text) => ({ type: 'summary_text', text })) };
  const state = encodeReasoningState(details);
  if (state !== undefined) item.encrypted_content = state;
  return item;
}

/** The status and `incomplete_details` a finish reason gives. */
export function statusOf(reason: Exclude<FinishReason, 'error'>): { status: ResponseStatus; incomplete: { reason: 'max_output_tokens' | 'content_filter' } | null } {
  switch (reason) {
    case 'length':
      return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
    case 'content_filter':
      return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
    case 'stop':
    case 'tool_calls':
      return { status: 'completed', incomplete: null };
  }
}

/** The `code` of a Response's `error` (a closed list in the schema) for a gateway error. */
function responseErrorCode(err: GatewayError): string {
  if (err.code === 'upstream_rate_limited' || err.code === 'rate_limited') return 'rate_limit_exceeded';
  if (err.status >= 400 && err.status < 500 && err.scope === 'request') return 'invalid_prompt';
  return 'server_error';
}

/** A Response's `error` object for a failed generation (the catalog code stays in the message). */
export function responseError(err: GatewayError): { code: string; message: string } {
  return { code: responseErrorCode(err), message: `${err.code}: ${err.message}` };
}

/**
 * Fields every Response reports with the same value: the gateway runs no background responses,
 * does not truncate input, and does not learn the upstream's service tier.
 */
const FIXED_SETTINGS = { truncation: 'disabled', background: false, service_tier: 'default' } as const;
const NO_TOOLS: readonly unknown[] = Object.freeze([]);
const TEXT_FORMAT_DEFAULT = Object.freeze({ format: Object.freeze({ type: 'text' }) });

const numberOr = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
const integerOr = <T>(v: unknown, fallback: T): number | T => (Number.isInteger(v) ? (v as number) : fallback);
const stringOr = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * The tools a Response echoes: function tools with `description`, `parameters` and `strict`
 * always present (null when the request left them out: the upstream's default applied, which
 * differs between lanes), other tools (namespaces, hosted tools) as sent.
 */
function echoedTools(tools: readonly unknown[] | undefined): readonly unknown[] {
  if (!tools?.length) return NO_TOOLS;
  return tools.map((t) => {
    const tool = t as ResponsesFunctionTool;
    if (tool.type !== 'function') return t;
    return { ...tool, description: tool.description ?? null, parameters: tool.parameters ?? null, strict: tool.strict ?? null };
  });
}

/** `text` as a Response echoes it: a `json_schema` format's `strict` defaults to false (as upstream). */
function echoedText(req: ResponsesRequest): Record<string, unknown> {
  const format = req.text?.format;
  if (!format) return TEXT_FORMAT_DEFAULT;
  return { format: format.type === 'json_schema' && format.strict == null ? { ...format, strict: false } : format };
}

/**
 * The settings part of every Response object of one request, built once per request (a stream
 * reuses it for each snapshot): the request's settings echoed, defaults where it sent none
 * (`temperature` / `top_p` 1, `presence_penalty` / `frequency_penalty` / `top_logprobs` 0,
 * `max_tool_calls` / `safety_identifier` / `prompt_cache_key` null) and {@link FIXED_SETTINGS}.
 * Every field the Open Responses `ResponseResource` requires is present.
 * @see https://www.openresponses.org/reference
 */
export function responseSettings(req: ResponsesRequest): Record<string, unknown> {
  const r = req as ResponsesRequest & Record<string, unknown>;
  return {
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: integerOr(r.max_tool_calls, null),
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: req.previous_response_id ?? null,
    reasoning: req.reasoning ? { effort: req.reasoning.effort ?? null, summary: req.reasoning.summary ?? null } : null,
    store: req.store === true,
    temperature: req.temperature ?? 1,
    top_p: req.top_p ?? 1,
    presence_penalty: numberOr(r.presence_penalty, 0),
    frequency_penalty: numberOr(r.frequency_penalty, 0),
    top_logprobs: integerOr(r.top_logprobs, 0),
    text: echoedText(req),
    tool_choice: req.tool_choice ?? 'auto',
    tools: echoedTools(req.tools),
    ...FIXED_SETTINGS,
    safety_identifier: stringOr(r.safety_identifier),
    prompt_cache_key: stringOr(r.prompt_cache_key),
    ...(req.user !== undefined ? { user: req.user } : {}),
    metadata: req.metadata ?? {},
  };
}

/**
 * The Response object: identity, `status`, `output`, `usage` (null while in progress) and the
 * request's {@link responseSettings}. `created_at` and `completed_at` are Unix seconds.
 */
export function responseObject(
  ident: ResponseIdentity,
  settings: Record<string, unknown>,
  state: { status: ResponseStatus; output: Record<string, unknown>[]; usage: Record<string, unknown> | null; incomplete?: { reason: string } | null; error?: { code: string; message: string } | null },
): Record<string, unknown> {
  let outputText = '';
  for (const item of state.output) {
    if (item.type !== 'message') continue;
    for (const p of item.content as { type: string; text?: string }[]) if (p.type === 'output_text') outputText += p.text ?? '';
  }
  return {
    id: ident.id,
    object: 'response',
    created_at: ident.created,
    status: state.status,
    completed_at: state.status === 'completed' ? Math.floor(Date.now() / 1000) : null,
    error: state.error ?? null,
    incomplete_details: state.incomplete ?? null,
    model: ident.model,
    output: state.output,
    output_text: outputText,
    usage: state.usage,
    ...settings,
  };
}

/** What a stored Response lacks when it was kept before every setting was written (older gateways). */
const STORED_DEFAULTS = Object.freeze({
  usage: null,
  max_tool_calls: null,
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  ...FIXED_SETTINGS,
  safety_identifier: null,
  prompt_cache_key: null,
});

/**
 * A stored Response as `GET /v1/responses/{id}` returns it: the settings a response kept by an
 * older gateway lacks get the defaults {@link responseSettings} gives an unset field, function
 * tools their `description` / `parameters` / `strict`. A response kept by this version comes back
 * unchanged (same fields and values).
 */
export function completeStoredResponse(stored: Record<string, unknown>): Record<string, unknown> {
  return { ...STORED_DEFAULTS, ...stored, tools: echoedTools(Array.isArray(stored.tools) ? stored.tools : undefined) };
}

/** The output items of a complete result: reasoning, then the message, then function calls. */
export function resultItems(responseId: string, result: ChatResult, itemStatus: 'completed' | 'incomplete', namespaces: ReadonlyMap<string, string>): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (result.reasoning || result.reasoningDetails?.length) {
    items.push(reasoningItem(itemId(responseId, 'rs', items.length), itemStatus, result.reasoning ? [result.reasoning] : [], result.reasoningDetails ?? []));
  }
  const content: Record<string, unknown>[] = [];
  if (result.content) content.push(outputTextPart(result.content));
  if (result.refusal) content.push(refusalPart(result.refusal));
  if (content.length) items.push(messageItem(itemId(responseId, 'msg', items.length), itemStatus, content));
  result.toolCalls.forEach((tc: ToolCall) => {
    items.push(functionCallItem(itemId(responseId, 'fc', items.length), itemStatus, { id: tc.id, name: tc.function.name, arguments: tc.function.arguments }, namespaces.get(tc.function.name)));
  });
  return items;
}

/** The non-streamed response body. */
export function responseBody(ident: ResponseIdentity, req: ResponsesRequest, result: ChatResult, usage: Usage, costUsd: number): Record<string, unknown> {
  const { status, incomplete } = statusOf(result.finishReason);
  return responseObject(ident, responseSettings(req), { status, incomplete, output: resultItems(ident.id, result, status === 'completed' ? 'completed' : 'incomplete', namespacesOf(req)), usage: responsesUsage(usage, costUsd) });
}
