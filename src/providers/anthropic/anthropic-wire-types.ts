/**
 * The Anthropic Messages API on the wire: what the gateway sends (request bodies and content
 * blocks, strictly typed) and what it receives (responses, stream events, errors — loosely
 * typed: every received field is optional, new block/event/delta types appear over time and
 * must be ignored, not rejected).
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */

// ---------------------------------------------------------------------------------------------
// Request

/** Prompt-cache breakpoint on a block, passed through from the client's `cache_control`. */
export type AnthropicCacheControl = { type: 'ephemeral'; ttl?: string } & Record<string, unknown>;

export interface AnthropicTextBlock {
  type: 'text';
  /** Must be non-empty. */
  text: string;
  cache_control?: AnthropicCacheControl;
}

/** Media types Anthropic accepts for images. */
export type AnthropicImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';

export interface AnthropicImageBlock {
  type: 'image';
  source: { type: 'base64'; media_type: AnthropicImageMediaType; data: string } | { type: 'url'; url: string };
}

export interface AnthropicDocumentBlock {
  type: 'document';
  source:
    | { type: 'base64'; media_type: 'application/pdf'; data: string }
    | { type: 'text'; media_type: 'text/plain'; data: string }
    | { type: 'url'; url: string };
}

export interface AnthropicToolUseBlock {
  type: 'tool_use';
  /** Matches `^[a-zA-Z0-9_-]+$`. */
  id: string;
  name: string;
  /** Always a JSON object. */
  input: Record<string, unknown>;
}

export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | AnthropicTextBlock[];
}

/** A signed thinking block, echoed back unmodified on later turns. */
export interface AnthropicThinkingBlock {
  type: 'thinking';
  thinking: string;
  signature: string;
}

export interface AnthropicRedactedThinkingBlock {
  type: 'redacted_thinking';
  data: string;
}

export type AnthropicUserBlock = AnthropicTextBlock | AnthropicImageBlock | AnthropicDocumentBlock | AnthropicToolResultBlock;
export type AnthropicAssistantBlock = AnthropicThinkingBlock | AnthropicRedactedThinkingBlock | AnthropicTextBlock | AnthropicToolUseBlock;

export type AnthropicMessage =
  | { role: 'user'; content: AnthropicUserBlock[] }
  | { role: 'assistant'; content: AnthropicAssistantBlock[] };

export interface AnthropicTool {
  name: string;
  description?: string;
  /** A JSON Schema whose root is `type: "object"`. */
  input_schema: Record<string, unknown>;
  /** Strict tool use (structured outputs); only sent to endpoints listing `structured_outputs`. */
  strict?: boolean;
}

export type AnthropicToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** Extended thinking with a fixed budget (tokens, ≥ 1024 and < `max_tokens`). */
export interface AnthropicThinking {
  type: 'enabled';
  budget_tokens: number;
  /** `omitted`: thinking text is not returned (signatures still are). */
  display?: 'summarized' | 'omitted';
}

/** `MessageCreateParams` as the gateway builds it. */
export interface AnthropicRequestBody {
  model: string;
  /** Required by Anthropic: the output limit in tokens, thinking included. */
  max_tokens: number;
  messages: AnthropicMessage[];
  system?: AnthropicTextBlock[];
  stop_sequences?: string[];
  /** 0–1. */
  temperature?: number;
  top_p?: number;
  top_k?: number;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  thinking?: AnthropicThinking;
  metadata?: { user_id: string };
  /** Automatic prompt caching: the breakpoint moves to the last cacheable block. */
  cache_control?: { type: 'ephemeral'; ttl?: string };
  /** Structured outputs: the answer text is JSON matching `schema`. */
  output_config?: { format: { type: 'json_schema'; schema: Record<string, unknown> } };
  stream?: true;
}

// ---------------------------------------------------------------------------------------------
// Response

/** `usage` of a response, `message_start` or `message_delta` (counts in tokens). */
export interface AnthropicUsageWire {
  /** Uncached input tokens only. */
  input_tokens?: number | null;
  /** Output tokens, thinking included. */
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
  [key: string]: unknown;
}

/** A content block of a response (or of a `content_block_start`); unknown types are ignored. */
export interface AnthropicContentBlockWire {
  type?: string;
  text?: string;
  thinking?: string;
  signature?: string;
  data?: string;
  id?: string;
  name?: string;
  input?: unknown;
  [key: string]: unknown;
}

export interface AnthropicErrorWire {
  type?: string;
  message?: string;
}

/** A complete (non-streamed) response, or an error body. */
export interface AnthropicResponseWire {
  id?: string;
  type?: string;
  role?: string;
  model?: string;
  content?: AnthropicContentBlockWire[] | null;
  stop_reason?: string | null;
  stop_sequence?: string | null;
  usage?: AnthropicUsageWire | null;
  error?: AnthropicErrorWire | null;
}

/** `delta` of a `content_block_delta` event. */
export interface AnthropicDeltaWire {
  type?: string;
  text?: string;
  thinking?: string;
  signature?: string;
  partial_json?: string;
  [key: string]: unknown;
}

/** One stream event payload (the JSON of one SSE `data:`). */
export interface AnthropicStreamEventWire {
  type?: string;
  message?: AnthropicResponseWire;
  index?: number;
  content_block?: AnthropicContentBlockWire;
  delta?: AnthropicDeltaWire & { stop_reason?: string | null; stop_sequence?: string | null };
  usage?: AnthropicUsageWire | null;
  error?: AnthropicErrorWire | null;
}
