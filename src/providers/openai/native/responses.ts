import type { ReasoningDetail, ToolCall, Usage } from '../../../core/chat-types.js';
import type { ChatResult } from '../../../core/chat-result.js';
import type { StreamPart } from '../../../core/stream-part.js';
import { clampOutputLimit } from '../../../core/output-limit.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { NativeLane, ProviderTarget, StreamTransform, UpstreamCall } from '../../types.js';
import { OPENAI_SITE, type OpenAIWireSite } from '../convert-to-openai-request.js';
import { inBandOpenAIError } from '../openai-error.js';
import type { OpenAIErrorWire } from '../openai-wire-types.js';

/**
 * The native Responses lane of the `openai` kind: endpoints with `supports_responses` get the
 * client's own Responses request at `POST {base_url}/responses`, and their answers are read back
 * into internal parts (text, reasoning summaries, encrypted reasoning, function calls, usage,
 * errors) for the record and the client's stream.
 * @see https://platform.openai.com/docs/api-reference/responses
 */

/** `format` of the reasoning details that carry an OpenAI reasoning item's `encrypted_content`. */
export const OPENAI_RESPONSES_REASONING_FORMAT = 'openai-responses-v1';

/** Fields only the gateway reads: never sent upstream. */
const GATEWAY_ONLY = new Set(['models', 'provider', 'op', 'previous_response_id', 'store', 'stream']);

/**
 * The upstream call for a Responses request sent as it came, with the gateway's edits only: the
 * upstream model name, `stream`, `store: false` (the gateway keeps responses itself and has
 * already expanded `previous_response_id` into `input`) and the gateway fields removed. Output
 * limits were checked by routing (an endpoint's `max_completion_tokens` bounds
 * `max_output_tokens`; under `output_limit: clamp` a larger one is lowered to it, with a
 * warning); nothing is dropped. `site`: where the call goes and how it authenticates (default:
 * kind `openai`'s).
 */
export function convertToOpenAIResponsesRequest(req: Record<string, unknown>, target: ProviderTarget, stream: boolean, site: OpenAIWireSite = OPENAI_SITE): UpstreamCall {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(req)) if (!GATEWAY_ONLY.has(k) && v !== undefined) body[k] = v;
  body.model = site.model(target);
  body.store = false;
  if (stream) body.stream = true;
  const warnings: string[] = [];
  if (typeof body.max_output_tokens === 'number') body.max_output_tokens = clampOutputLimit(body.max_output_tokens, target.endpoint.max_completion_tokens, 'max_output_tokens', warnings);
  return { url: site.url(target, '/responses'), headers: site.headers(target), body: JSON.stringify(body), dropped: [], warnings };
}

interface ResponsesUsageWire {
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number };
  output_tokens_details?: { reasoning_tokens?: number };
}

interface ResponseWire {
  status?: string;
  output?: Array<Record<string, unknown>>;
  usage?: ResponsesUsageWire | null;
  error?: OpenAIErrorWire | null;
  incomplete_details?: { reason?: string } | null;
}

const count = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.round(v) : null);

/** Responses usage as internal usage; null when absent. */
function convertUsage(u: ResponsesUsageWire | null | undefined): Usage | null {
  if (!u || typeof u !== 'object') return null;
  const promptTokens = count(u.input_tokens);
  const completionTokens = count(u.output_tokens);
  if (promptTokens === null && completionTokens === null) return null;
  return {
    promptTokens,
    completionTokens,
    cachedTokens: count(u.input_tokens_details?.cached_tokens),
    cacheWriteTokens: count(u.input_tokens_details?.cache_write_tokens),
    reasoningTokens: count(u.output_tokens_details?.reasoning_tokens),
    source: 'upstream',
  };
}

/** The finish reason of a finished response. */
function finishOf(res: ResponseWire, hasToolCalls: boolean): { finishReason: ChatResult['finishReason']; native: string } {
  if (res.status === 'incomplete') {
    const reason = res.incomplete_details?.reason ?? 'incomplete';
    return { finishReason: reason === 'content_filter' ? 'content_filter' : 'length', native: reason };
  }
  return { finishReason: hasToolCalls ? 'tool_calls' : 'stop', native: res.status ?? 'completed' };
}

const texts = (list: unknown): string[] => (Array.isArray(list) ? list.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')) : []);

/** The reasoning details of an OpenAI reasoning item (its encrypted content). */
function detailsOf(item: Record<string, unknown>): ReasoningDetail[] {
  return typeof item.encrypted_content === 'string' && item.encrypted_content !== ''
    ? [{ type: 'reasoning.encrypted', data: item.encrypted_content, format: OPENAI_RESPONSES_REASONING_FORMAT, ...(typeof item.id === 'string' ? { id: item.id } : {}) }]
    : [];
}

/**
 * A complete Responses object as a {@link ChatResult}.
 * @throws GatewayError for a `failed` response or an error body.
 */
export function convertOpenAIResponsesResult(providerId: string, body: unknown): ChatResult {
  const res = (body ?? {}) as ResponseWire;
  if (typeof res !== 'object') throw new GatewayError('upstream_invalid_response', `${providerId}: response is not a JSON object`);
  if (res.error || res.status === 'failed') throw inBandOpenAIError(providerId, res.error ?? { message: 'the upstream response failed' });
  if (!Array.isArray(res.output)) throw new GatewayError('upstream_invalid_response', `${providerId}: response has no output`, { metadata: { provider: providerId } });
  let content: string | null = null;
  let refusal: string | null = null;
  const reasoning: string[] = [];
  const reasoningDetails: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  for (const item of res.output) {
    switch (item.type) {
      case 'message':
        for (const p of Array.isArray(item.content) ? (item.content as Record<string, unknown>[]) : []) {
          if (p.type === 'output_text' && typeof p.text === 'string') content = (content ?? '') + p.text;
          if (p.type === 'refusal' && typeof p.refusal === 'string') refusal = (refusal ?? '') + p.refusal;
        }
        break;
      case 'reasoning':
        reasoning.push(...texts(item.summary), ...texts(item.content));
        reasoningDetails.push(...detailsOf(item));
        break;
      case 'function_call':
        toolCalls.push({ id: String(item.call_id ?? item.id ?? ''), type: 'function', function: { name: String(item.name ?? ''), arguments: typeof item.arguments === 'string' && item.arguments !== '' ? item.arguments : '{}' } });
        break;
      default:
        break;
    }
  }
  const finish = finishOf(res, toolCalls.length > 0);
  const joined = reasoning.filter((t) => t !== '').join('\n\n');
  return {
    content,
    reasoning: joined === '' ? null : joined,
    ...(reasoningDetails.length ? { reasoningDetails } : {}),
    refusal,
    toolCalls,
    finishReason: finish.finishReason,
    nativeFinishReason: finish.native,
    usage: convertUsage(res.usage),
  };
}

/**
 * Reads a Responses event stream into {@link StreamPart}s: text and refusal deltas, reasoning
 * summary (and reasoning text) deltas, encrypted reasoning at its item's end, function calls
 * (numbered in order) and their argument deltas, the finish and usage from
 * `response.completed` / `response.incomplete`, and `response.failed` / `error` as errors.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
export function createOpenAIResponsesStreamTransform(providerId: string): StreamTransform {
  /** Tool-call index and arguments seen, by item id. */
  const calls = new Map<string, { index: number; args: string }>();
  let summaries = 0;
  let ended = false;

  return {
    push({ data }) {
      if (data === '[DONE]' || data.trim() === '') return [];
      let ev: Record<string, unknown>;
      try {
        ev = JSON.parse(data) as Record<string, unknown>;
      } catch {
        return [{ type: 'error', error: new GatewayError('upstream_invalid_response', `${providerId}: stream event is not JSON`, { metadata: { provider: providerId } }) }];
      }
      const item = (ev.item ?? {}) as Record<string, unknown>;
      switch (ev.type) {
        case 'response.output_text.delta':
          return typeof ev.delta === 'string' && ev.delta !== '' ? [{ type: 'text', text: ev.delta }] : [];
        case 'response.refusal.delta':
          return typeof ev.delta === 'string' && ev.delta !== '' ? [{ type: 'refusal', text: ev.delta }] : [];
        case 'response.reasoning_summary_part.added':
          // Summary parts after the first are separated like paragraphs.
          return summaries++ > 0 ? [{ type: 'reasoning', text: '\n\n' }] : [];
        case 'response.reasoning_summary_text.delta':
        case 'response.reasoning_text.delta':
          return typeof ev.delta === 'string' && ev.delta !== '' ? [{ type: 'reasoning', text: ev.delta }] : [];
        case 'response.output_item.added':
          if (item.type === 'function_call') {
            const index = calls.size;
            calls.set(String(item.id), { index, args: '' });
            const parts: StreamPart[] = [{ type: 'tool-call-start', index, id: String(item.call_id ?? item.id), name: String(item.name ?? '') }];
            if (typeof item.arguments === 'string' && item.arguments !== '') {
              calls.get(String(item.id))!.args = item.arguments;
              parts.push({ type: 'tool-call-delta', index, argumentsDelta: item.arguments });
            }
            return parts;
          }
          return [];
        case 'response.function_call_arguments.delta': {
          const call = calls.get(String(ev.item_id));
          if (!call || typeof ev.delta !== 'string') return [];
          call.args += ev.delta;
          return [{ type: 'tool-call-delta', index: call.index, argumentsDelta: ev.delta }];
        }
        case 'response.output_item.done': {
          if (item.type === 'reasoning') {
            const details = detailsOf(item);
            return details.length ? [{ type: 'reasoning-details', details }] : [];
          }
          const call = item.type === 'function_call' ? calls.get(String(item.id)) : undefined;
          // Arguments sent whole at the item's end (no deltas): pass on what was not seen.
          if (call && typeof item.arguments === 'string' && item.arguments.startsWith(call.args) && item.arguments.length > call.args.length) {
            const rest = item.arguments.slice(call.args.length);
            call.args = item.arguments;
            return [{ type: 'tool-call-delta', index: call.index, argumentsDelta: rest }];
          }
          return [];
        }
        case 'response.completed':
        case 'response.incomplete': {
          ended = true;
          const res = (ev.response ?? {}) as ResponseWire;
          const finish = finishOf(res, calls.size > 0);
          const parts: StreamPart[] = [{ type: 'finish', finishReason: finish.finishReason, nativeFinishReason: finish.native }];
          const usage = convertUsage(res.usage);
          if (usage) parts.push({ type: 'usage', usage });
          return parts;
        }
        case 'response.failed': {
          ended = true;
          const res = (ev.response ?? {}) as ResponseWire;
          return [{ type: 'error', error: inBandOpenAIError(providerId, res.error ?? { message: 'the upstream response failed' }) }];
        }
        case 'error':
          ended = true;
          return [{ type: 'error', error: inBandOpenAIError(providerId, { message: String(ev.message ?? 'the upstream sent an error event'), ...(typeof ev.code === 'string' ? { code: ev.code } : {}) }) }];
        default:
          return [];
      }
    },
    flush() {
      if (ended) return [];
      return [{ type: 'error', error: new GatewayError('upstream_connection_failed', `${providerId}: the stream ended before the response finished`, { metadata: { provider: providerId } }) }];
    },
  };
}

/**
 * The Responses API's native lane of the `openai` kind, for endpoints with `supports_responses`:
 * the call is {@link convertToOpenAIResponsesRequest}; the adapter reads the answer with
 * {@link convertOpenAIResponsesResult} / {@link createOpenAIResponsesStreamTransform} (operation `responses`).
 */
export const OPENAI_RESPONSES_LANE: NativeLane<Record<string, unknown>> = {
  native: true,
  operation: 'responses',
  requires: 'supports_responses',
  buildCall: (req, target, stream) => convertToOpenAIResponsesRequest(req, target, stream),
};
