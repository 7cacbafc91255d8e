import type { ReasoningDetail } from '../../../core/chat-types.js';
import { OPENAI_RESPONSES_REASONING_FORMAT } from '../../../providers/openai/native/responses.js';

/**
 * Provider reasoning state (Anthropic thinking signatures, redacted thinking, Gemini thought
 * signatures) carried in a reasoning item's `encrypted_content`, so a client that echoes its
 * reasoning items back (as Codex and the AI SDK do) hands the upstream its signatures next turn.
 * The value is opaque to clients: a version prefix and base64url JSON. OpenAI's own encrypted
 * reasoning (from a native `/responses` endpoint) is packed the same way with its item id, and
 * {@link restoreNativeReasoning} puts both back on the item when it returns, so OpenAI gets its
 * reasoning item exactly as it made it.
 */

const PREFIX = 'opr1.';

/** The `encrypted_content` carrying `details`; undefined when there are none. */
export function encodeReasoningState(details: readonly ReasoningDetail[]): string | undefined {
  if (details.length === 0) return undefined;
  return PREFIX + Buffer.from(JSON.stringify(details)).toString('base64url');
}

/**
 * The reasoning details inside an `encrypted_content`: those the gateway packed, else the value
 * as OpenAI's encrypted reasoning (which only OpenAI reads; other upstreams ignore its format).
 */
export function decodeReasoningState(value: string): ReasoningDetail[] {
  if (!value.startsWith(PREFIX)) return [{ type: 'reasoning.encrypted', data: value, format: OPENAI_RESPONSES_REASONING_FORMAT }];
  try {
    const parsed = JSON.parse(Buffer.from(value.slice(PREFIX.length), 'base64url').toString('utf8')) as unknown;
    return Array.isArray(parsed) ? (parsed.filter((d) => d && typeof d === 'object' && typeof (d as ReasoningDetail).type === 'string') as ReasoningDetail[]) : [];
  } catch {
    return [];
  }
}

/**
 * Input reasoning items that carry OpenAI's own encrypted reasoning (packed by
 * {@link encodeReasoningState}) get back OpenAI's item id and `encrypted_content`, so a native
 * `/responses` endpoint can verify them; other items are returned as they are.
 */
export function restoreNativeReasoning<T extends { type?: string }>(items: T[]): T[] {
  return items.map((item) => {
    const r = item as T & { encrypted_content?: string | null; id?: string };
    if (item.type !== 'reasoning' || typeof r.encrypted_content !== 'string' || !r.encrypted_content.startsWith(PREFIX)) return item;
    const details = decodeReasoningState(r.encrypted_content);
    const only = details.length === 1 ? details[0]! : undefined;
    if (only?.format !== OPENAI_RESPONSES_REASONING_FORMAT || only.data === undefined) return item;
    return { ...item, encrypted_content: only.data, ...(only.id !== undefined ? { id: only.id } : {}) };
  });
}
