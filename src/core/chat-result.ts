import type { FinishReason, ReasoningDetail, ToolCall, Usage } from './chat-types.js';

/** A complete (non-streamed) result, provider-neutral. `usage` null: the upstream reported none. */
export interface ChatResult {
  content: string | null;
  reasoning: string | null;
  /** Reasoning state to echo back next turn; empty when none. */
  reasoningDetails?: ReasoningDetail[];
  refusal: string | null;
  toolCalls: ToolCall[];
  finishReason: Exclude<FinishReason, 'error'>;
  nativeFinishReason: string | null;
  usage: Usage | null;
  systemFingerprint?: string | null;
  /** The upstream's log probabilities (OpenAI's choice `logprobs`), relayed as sent; absent when none. */
  logprobs?: Record<string, unknown> | null;
  /**
   * What the upstream said about the answer beyond the generation, kept in the generation record
   * (`detail.provider_metadata`), never shown to the client: e.g. Azure's `prompt_filter_results`
   * and `content_filter_results`. Absent when there is none.
   */
  providerMetadata?: Record<string, unknown>;
}
