import { newToolCallId } from '../../util/ids.js';
import type { StreamPart } from '../../core/stream-part.js';
import type { OpenAIToolCallWire } from './openai-wire-types.js';

/**
 * Gives streamed tool calls dense 0-based indexes whatever the upstream sends: sparse indexes,
 * no `index` at all, or several calls at one index (Ollama). A delta opens a new call when its
 * index is new, or when it carries an `id` different from the call open at that index.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
export class ToolCallIndexer {
  private readonly byUpstream = new Map<number, { dense: number; id: string }>();
  private last: { dense: number; id: string } | undefined;
  private count = 0;
  /** Argument text seen per dense index. */
  readonly argumentsSeen: string[] = [];

  get size(): number {
    return this.count;
  }

  push(delta: OpenAIToolCallWire): StreamPart[] {
    const fn = delta.function ?? {};
    const upstreamIndex = typeof delta.index === 'number' ? delta.index : undefined;
    const id = typeof delta.id === 'string' && delta.id !== '' ? delta.id : undefined;
    let call = upstreamIndex !== undefined ? this.byUpstream.get(upstreamIndex) : this.last;
    const parts: StreamPart[] = [];
    const opensNew = call === undefined || (id !== undefined && id !== call.id);
    if (opensNew) {
      call = { dense: this.count++, id: id ?? newToolCallId() };
      if (upstreamIndex !== undefined) this.byUpstream.set(upstreamIndex, call);
      this.argumentsSeen[call.dense] = '';
      parts.push({ type: 'tool-call-start', index: call.dense, id: call.id, name: typeof fn.name === 'string' ? fn.name : '' });
    }
    this.last = call;
    const args = fn.arguments;
    const text = typeof args === 'string' ? args : args && typeof args === 'object' ? JSON.stringify(args) : '';
    if (text !== '') {
      this.argumentsSeen[call!.dense] += text;
      parts.push({ type: 'tool-call-delta', index: call!.dense, argumentsDelta: text });
    }
    return parts;
  }
}
