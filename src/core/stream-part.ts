import type { FinishReason, ReasoningDetail, Usage } from './chat-types.js';
import type { GatewayError } from '../errors/gateway-error.js';

/** The kinds of content block an answer is made of, in the order they arrive. */
export type ContentBlockKind = 'text' | 'reasoning' | 'refusal' | 'tool-call';

/**
 * A provider-neutral piece of a streamed (or complete) generation: what provider stream
 * transforms produce and ingress stream encoders consume.
 *
 * Content parts (`text`, `reasoning`, `reasoning-details`, `refusal`, `tool-call-*`) arrive in
 * order. `block-start` / `block-end` mark where one content block begins and ends (a run of text,
 * of reasoning with its details, one tool call); provider transforms do not emit them —
 * {@link ContentBlockFramer} (content-blocks.ts) inserts them for client APIs whose events are
 * block-structured (Anthropic's `content_block_*`, Responses' `output_item.*`).
 */
export type StreamPart =
  /** `logprobs`: the upstream's log probabilities of this text (OpenAI's choice `logprobs`), relayed as sent. */
  | { type: 'text'; text: string; logprobs?: Record<string, unknown> }
  | { type: 'reasoning'; text: string }
  /** Reasoning state to echo back next turn (signatures, redacted thinking). */
  | { type: 'reasoning-details'; details: ReasoningDetail[] }
  | { type: 'refusal'; text: string }
  /** A new tool call at a dense 0-based `index`. */
  | { type: 'tool-call-start'; index: number; id: string; name: string }
  | { type: 'tool-call-delta'; index: number; argumentsDelta: string }
  /** A content block begins; `index` is its 0-based position in the answer. */
  | { type: 'block-start'; block: ContentBlockKind; index: number }
  /** The content block begun at `index` is complete. */
  | { type: 'block-end'; block: ContentBlockKind; index: number }
  | { type: 'finish'; finishReason: Exclude<FinishReason, 'error'>; nativeFinishReason: string | null }
  | { type: 'usage'; usage: Usage }
  | { type: 'error'; error: GatewayError };

/** The parts that carry generated content (what an encoder writes as it arrives). */
export type OutputPart = Exclude<StreamPart, { type: 'finish' | 'usage' | 'error' }>;
