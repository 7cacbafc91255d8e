import type { ReasoningDetail, Usage } from '../../../core/chat-types.js';
import type { OutputPart } from '../../../core/stream-part.js';
import type { GatewayError } from '../../../errors/gateway-error.js';
import type { ResponseIdentity, StreamEncoder } from '../../types.js';
import {
  functionCallItem,
  itemId,
  messageItem,
  namespacesOf,
  outputTextPart,
  reasoningItem,
  refusalPart,
  responseError,
  responseObject,
  responseSettings,
  responsesUsage,
  statusOf,
  type ResponseStatus,
} from './response-object.js';
import type { ResponsesRequest } from './response-request-schema.js';

/** The output item being streamed. */
type OpenItem =
  | { kind: 'text' | 'refusal'; index: number; id: string; text: string }
  | { kind: 'reasoning'; index: number; id: string; text: string; partOpen: boolean; details: ReasoningDetail[] }
  | { kind: 'tool-call'; index: number; id: string; callId: string; name: string; args: string };

/**
 * Responses API stream events from internal stream parts framed into content blocks (the
 * adapter sets `contentBlocks`): `response.created`, `response.in_progress`, then per block an
 * output item — a message (`content_part.*`, `output_text.*` or `refusal.*`), a reasoning item
 * (`reasoning_summary_part.*`, `reasoning_summary_text.*`, provider signatures in
 * `encrypted_content`) or a function call (`function_call_arguments.*`) — each between
 * `output_item.added` and `output_item.done`, then `response.completed` or `response.incomplete`
 * (or `error` and `response.failed`). Every event carries a `sequence_number` from 0; each
 * embedded response is a complete Response object ({@link responseSettings} built once per
 * stream), `usage: null` until the end. The `error` event carries OpenAI's `code` / `message` /
 * `param` and the Open Responses `error` object (the `openai` SDK throws it as an `APIError`). Function
 * calls stay open until a block of another kind starts or the response ends, so interleaved
 * arguments of parallel calls still land in their own item.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
export function responseStreamEncoder(ident: ResponseIdentity, req: ResponsesRequest): StreamEncoder & { response(): Record<string, unknown> | undefined } {
  let seq = 0;
  let started = false;
  let final: Record<string, unknown> | undefined;
  const output: Record<string, unknown>[] = [];
  let open: OpenItem | undefined;
  /** Function calls by their tool-call index, until closed. */
  const calls = new Map<number, Extract<OpenItem, { kind: 'tool-call' }>>();
  const namespaces = namespacesOf(req);
  const settings = responseSettings(req);

  const ev = (type: string, fields: Record<string, unknown>): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: seq++ })}\n\n`;
  const snapshot = (status: ResponseStatus, extra: { usage?: Record<string, unknown> | null; incomplete?: { reason: string } | null; error?: { code: string; message: string } | null } = {}) =>
    responseObject(ident, settings, { status, output: output.filter(Boolean), usage: extra.usage ?? null, incomplete: extra.incomplete ?? null, error: extra.error ?? null });

  const start = (): string => {
    if (started) return '';
    started = true;
    const r = snapshot('in_progress');
    return ev('response.created', { response: r }) + ev('response.in_progress', { response: r });
  };

  const closeCall = (c: Extract<OpenItem, { kind: 'tool-call' }>, status: 'completed' | 'incomplete'): string => {
    calls.delete(c.index);
    const item = functionCallItem(c.id, status, { id: c.callId, name: c.name, arguments: c.args }, namespaces.get(c.name));
    output[c.index] = item;
    return ev('response.function_call_arguments.done', { item_id: c.id, output_index: c.index, name: c.name, arguments: c.args }) + ev('response.output_item.done', { output_index: c.index, item });
  };
  const closeCalls = (status: 'completed' | 'incomplete'): string => {
    let text = '';
    for (const c of [...calls.values()].sort((a, b) => a.index - b.index)) text += closeCall(c, status);
    return text;
  };

  const closeOpen = (status: 'completed' | 'incomplete'): string => {
    const o = open;
    open = undefined;
    if (!o || o.kind === 'tool-call') return '';
    const base = { item_id: o.id, output_index: o.index };
    if (o.kind === 'reasoning') {
      let text = '';
      if (o.partOpen) {
        const part = { type: 'summary_text', text: o.text };
        text += ev('response.reasoning_summary_text.done', { ...base, summary_index: 0, text: o.text });
        text += ev('response.reasoning_summary_part.done', { ...base, summary_index: 0, part });
      }
      const item = reasoningItem(o.id, status, o.partOpen ? [o.text] : [], o.details);
      output[o.index] = item;
      return text + ev('response.output_item.done', { output_index: o.index, item });
    }
    const part = o.kind === 'text' ? outputTextPart(o.text) : refusalPart(o.text);
    const done = o.kind === 'text' ? ev('response.output_text.done', { ...base, content_index: 0, text: o.text, logprobs: [] }) : ev('response.refusal.done', { ...base, content_index: 0, refusal: o.text });
    const item = messageItem(o.id, status, [part]);
    output[o.index] = item;
    return done + ev('response.content_part.done', { ...base, content_index: 0, part }) + ev('response.output_item.done', { output_index: o.index, item });
  };

  const part = (p: OutputPart): string => {
    switch (p.type) {
      case 'block-start': {
        if (p.block === 'tool-call') return ''; // the item opens at its tool-call-start (name and id)
        let text = closeCalls('completed');
        const index = output.length;
        output.push(undefined as unknown as Record<string, unknown>);
        if (p.block === 'reasoning') {
          const id = itemId(ident.id, 'rs', index);
          open = { kind: 'reasoning', index, id, text: '', partOpen: false, details: [] };
          return text + ev('response.output_item.added', { output_index: index, item: reasoningItem(id, 'in_progress', [], []) });
        }
        const id = itemId(ident.id, 'msg', index);
        open = { kind: p.block, index, id, text: '' };
        const empty = p.block === 'text' ? outputTextPart('') : refusalPart('');
        text += ev('response.output_item.added', { output_index: index, item: messageItem(id, 'in_progress', []) });
        return text + ev('response.content_part.added', { item_id: id, output_index: index, content_index: 0, part: empty });
      }
      case 'block-end':
        return p.block === 'tool-call' ? '' : closeOpen('completed');
      case 'text':
      case 'refusal': {
        if (!open || open.kind !== p.type) return '';
        open.text += p.text;
        const base = { item_id: open.id, output_index: open.index, content_index: 0 };
        return p.type === 'text' ? ev('response.output_text.delta', { ...base, delta: p.text, logprobs: [] }) : ev('response.refusal.delta', { ...base, delta: p.text });
      }
      case 'reasoning': {
        if (!open || open.kind !== 'reasoning') return '';
        let text = '';
        const base = { item_id: open.id, output_index: open.index, summary_index: 0 };
        if (!open.partOpen) {
          open.partOpen = true;
          text += ev('response.reasoning_summary_part.added', { ...base, part: { type: 'summary_text', text: '' } });
        }
        open.text += p.text;
        return text + ev('response.reasoning_summary_text.delta', { ...base, delta: p.text });
      }
      case 'reasoning-details':
        if (open?.kind === 'reasoning') open.details.push(...p.details);
        return '';
      case 'tool-call-start': {
        const index = output.length;
        output.push(undefined as unknown as Record<string, unknown>);
        const call = { kind: 'tool-call' as const, index, id: itemId(ident.id, 'fc', index), callId: p.id, name: p.name, args: '' };
        calls.set(p.index, call);
        // Keyed by the tool-call index for deltas; `index` above is the output index.
        return ev('response.output_item.added', { output_index: index, item: functionCallItem(call.id, 'in_progress', { id: p.id, name: p.name, arguments: '' }, namespaces.get(p.name)) });
      }
      case 'tool-call-delta': {
        const call = calls.get(p.index);
        if (!call || p.argumentsDelta === '') return '';
        call.args += p.argumentsDelta;
        return ev('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: p.argumentsDelta });
      }
    }
  };

  return {
    start,
    part,
    finish(reason, usage: Usage | null, costUsd) {
      const { status, incomplete } = statusOf(reason);
      const itemStatus = status === 'completed' ? 'completed' : 'incomplete';
      const text = start() + closeOpen(itemStatus) + closeCalls(itemStatus);
      final = snapshot(status, { usage: responsesUsage(usage, costUsd), incomplete });
      return text + ev(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: final });
    },
    error(err: GatewayError, requestId: string, usage: Usage | null, costUsd) {
      const text = start() + closeOpen('incomplete') + closeCalls('incomplete');
      const body = err.toBody(requestId);
      final = snapshot('failed', { usage: responsesUsage(usage, costUsd), error: responseError(err) });
      // Both shapes of the error event: OpenAI's fields at the top, the Open Responses `error` object.
      const param = body.param ?? null;
      return text + ev('error', { code: body.code, message: body.message, param, error: { type: body.type, code: body.code, message: body.message, param } }) + ev('response.failed', { response: final });
    },
    done: () => '',
    response: () => final,
  };
}
