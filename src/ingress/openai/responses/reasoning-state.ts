import type { ReasoningDetail } from '../../../core/chat-types.js';

/**
 * Provider reasoning state (Anthropic thinking signatures, redacted thinking, Gemini thought
 * signatures) carried in a reasoning item's `encrypted_content`, so a client that echoes its
 * reasoning items back (as Codex and the AI SDK do) hands the upstream its signatures next turn.
 * The value is opaque to clients: a version prefix and base64url JSON.
 */

const PREFIX = 'opr1.';

/** The `encrypted_content` carrying `details`; undefined when there are none. */
export function encodeReasoningState(details: readonly ReasoningDetail[]): string | undefined {
  if (details.length === 0) return undefined;
  return PREFIX + Buffer.from(JSON.stringify(details)).toString('base64url');
}

/**
 * The reasoning details inside an `encrypted_content` the gateway made; [] for any other value
 * (e.g. OpenAI's own encrypted reasoning, which only a native `/responses` endpoint can read).
 */
export function decodeReasoningState(value: string): ReasoningDetail[] {
  if (!value.startsWith(PREFIX)) return [];
  try {
    const parsed = JSON.parse(Buffer.from(value.slice(PREFIX.length), 'base64url').toString('utf8')) as unknown;
    return Array.isArray(parsed) ? (parsed.filter((d) => d && typeof d === 'object' && typeof (d as ReasoningDetail).type === 'string') as ReasoningDetail[]) : [];
  } catch {
    return [];
  }
}
