import type { ReasoningDetail } from '../../core/chat-types.js';
import { newToolCallId } from '../../util/ids.js';
import type { StreamPart } from '../../core/stream-part.js';
import { applyPartialArgs } from './gemini-partial-args.js';
import type { GeminiPart } from './gemini-wire-types.js';

/** `format` of the reasoning details that carry Gemini thought signatures. */
export const GEMINI_REASONING_FORMAT = 'google-gemini-v1';

/** Upstream function-call ids kept as tool-call ids (OpenAI's limits: ≤ 40 chars, this alphabet). */
const USABLE_ID = /^[A-Za-z0-9_-]{1,40}$/;

interface OpenCall {
  index: number;
  id: string;
  args: Record<string, unknown>;
}

/** A thought signature as a reasoning detail (`id`: the tool call it rides on, if any). */
export function signatureDetail(signature: string, toolCallId?: string): ReasoningDetail {
  const detail: ReasoningDetail = { type: 'reasoning.encrypted', data: signature };
  if (toolCallId !== undefined) detail.id = toolCallId;
  detail.format = GEMINI_REASONING_FORMAT;
  return detail;
}

/**
 * Turns the parts of candidate 0 into {@link StreamPart}s, for complete responses and for
 * streams alike (one reader per response):
 *
 * - `text` → `text`, or `reasoning` when `thought: true`; empty texts are skipped;
 * - `functionCall` → `tool-call-start` (dense 0-based index kept across chunks; id =
 *   Gemini's `id` when it has one that fits OpenAI's limits, else a new `call_…`) and one
 *   `tool-call-delta` with the whole arguments as JSON text (`"{}"` for none). Calls streamed
 *   in pieces (`willContinue: true` then `partialArgs` by JSON path, ended by a part without
 *   `willContinue`) are assembled and their arguments sent when the call ends;
 * - `thoughtSignature` (on any part) → a `reasoning-details` part with one
 *   `{type: 'reasoning.encrypted', data, format: 'google-gemini-v1'}` entry, whose `id` is the
 *   tool call id when the signature rides on a function call;
 * - other parts (inline data, code execution) are not output the gateway relays: skipped.
 * @see https://ai.google.dev/api/caching#Part
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
export class GeminiPartReader {
  private count = 0;
  private open: OpenCall | undefined;
  private lastCallId: string | undefined;

  /** Tool calls started so far. */
  get toolCallCount(): number {
    return this.count;
  }

  push(part: GeminiPart): StreamPart[] {
    if (!part || typeof part !== 'object') return [];
    const out: StreamPart[] = [];
    let signatureOwner: string | undefined;
    const fc = part.functionCall;
    if (fc && typeof fc === 'object') {
      signatureOwner = this.pushFunctionCall(fc, out);
    } else if (typeof part.text === 'string' && part.text !== '') {
      out.push({ type: part.thought === true ? 'reasoning' : 'text', text: part.text });
    }
    if (typeof part.thoughtSignature === 'string' && part.thoughtSignature !== '') {
      out.push({ type: 'reasoning-details', details: [signatureDetail(part.thoughtSignature, signatureOwner)] });
    }
    return out;
  }

  /** End a call still being streamed (the stream ended without its closing part). */
  finish(): StreamPart[] {
    const out: StreamPart[] = [];
    this.closeOpen(out);
    return out;
  }

  /** Handle one `functionCall`; returns the id of the call it belongs to. */
  private pushFunctionCall(fc: NonNullable<GeminiPart['functionCall']>, out: StreamPart[]): string | undefined {
    const name = typeof fc.name === 'string' ? fc.name : '';
    if (name === '' && this.open) {
      // A continuation of the call being streamed.
      const open = this.open;
      if (fc.args && typeof fc.args === 'object') Object.assign(open.args, fc.args);
      applyPartialArgs(open.args, fc.partialArgs);
      if (fc.willContinue !== true) this.closeOpen(out);
      return open.id;
    }
    if (name === '') return this.lastCallId; // e.g. the empty `{}` closing part after a whole call
    this.closeOpen(out);
    const id = typeof fc.id === 'string' && USABLE_ID.test(fc.id) ? fc.id : newToolCallId();
    const index = this.count++;
    this.lastCallId = id;
    out.push({ type: 'tool-call-start', index, id, name });
    const args: Record<string, unknown> = fc.args && typeof fc.args === 'object' && !Array.isArray(fc.args) ? { ...fc.args } : {};
    applyPartialArgs(args, fc.partialArgs);
    if (fc.willContinue === true) this.open = { index, id, args };
    else out.push({ type: 'tool-call-delta', index, argumentsDelta: JSON.stringify(args) });
    return id;
  }

  private closeOpen(out: StreamPart[]): void {
    if (!this.open) return;
    out.push({ type: 'tool-call-delta', index: this.open.index, argumentsDelta: JSON.stringify(this.open.args) });
    this.open = undefined;
  }
}
