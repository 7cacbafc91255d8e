/**
 * The Bedrock Runtime Converse API on the wire: what the gateway sends (strictly typed) and what
 * it receives (loosely typed: every received field optional, unknown block, delta and event types
 * ignored rather than rejected). Bytes fields (`image.source.bytes`, `document.source.bytes`,
 * `redactedContent`) are base64 text in JSON.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
 */

// ---------------------------------------------------------------------------------------------
// Request

/** A prompt-cache breakpoint: everything before it (in `system`, `messages` or `tools`) is cached. */
export interface BedrockCachePoint {
  cachePoint: { type: 'default'; ttl?: '5m' | '1h' };
}

export type BedrockImageFormat = 'png' | 'jpeg' | 'gif' | 'webp';
export type BedrockDocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md';

export interface BedrockTextBlock {
  text: string;
}

export interface BedrockImageBlock {
  image: { format: BedrockImageFormat; source: { bytes: string } };
}

export interface BedrockDocumentBlock {
  /** `name`: alphanumerics, single spaces, `-()[]` only. */
  document: { format: BedrockDocumentFormat; name: string; source: { bytes: string } | { text: string } };
}

export interface BedrockToolUseBlock {
  /** `input` is a JSON object, not text. */
  toolUse: { toolUseId: string; name: string; input: Record<string, unknown> };
}

export interface BedrockToolResultBlock {
  /** `content` is always an array. */
  toolResult: { toolUseId: string; content: Array<{ text: string }>; status?: 'success' | 'error' };
}

/** Reasoning echoed back on a later turn, unmodified: signed text, or redacted bytes. */
export interface BedrockReasoningBlock {
  reasoningContent: { reasoningText: { text: string; signature?: string } } | { redactedContent: string };
}

export type BedrockContentBlock =
  | BedrockTextBlock
  | BedrockImageBlock
  | BedrockDocumentBlock
  | BedrockToolUseBlock
  | BedrockToolResultBlock
  | BedrockReasoningBlock
  | BedrockCachePoint;

export interface BedrockMessage {
  role: 'user' | 'assistant';
  content: BedrockContentBlock[];
}

export type BedrockSystemBlock = BedrockTextBlock | BedrockCachePoint;

export interface BedrockToolSpec {
  toolSpec: { name: string; description?: string; inputSchema: { json: Record<string, unknown> } };
}

/** There is no `none`: the gateway leaves `toolChoice` out (or the tools, when the history allows). */
export type BedrockToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };

export interface BedrockToolConfig {
  tools: Array<BedrockToolSpec | BedrockCachePoint>;
  toolChoice?: BedrockToolChoice;
}

export interface BedrockInferenceConfig {
  /** Output limit in tokens (thinking included for Claude). */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
}

/** `POST /model/{modelId}/converse` and `/converse-stream` body (the model only in the path). */
export interface BedrockConverseRequest {
  messages: BedrockMessage[];
  system?: BedrockSystemBlock[];
  inferenceConfig?: BedrockInferenceConfig;
  toolConfig?: BedrockToolConfig;
  /** Model-specific fields (Claude's `thinking`, `top_k`). */
  additionalModelRequestFields?: Record<string, unknown>;
  /** String map kept with the invocation log. */
  requestMetadata?: Record<string, string>;
  /** Structured output: the answer text is JSON matching the schema (given as JSON text). */
  outputConfig?: { textFormat: { type: 'json_schema'; structure: { jsonSchema: { schema: string; name?: string; description?: string } } } };
}

// ---------------------------------------------------------------------------------------------
// Response

/** `usage` of a Converse answer or of a stream's `metadata` event (tokens). */
export interface BedrockUsageWire {
  /** Input tokens not read from or written to the cache (Claude). */
  inputTokens?: number | null;
  outputTokens?: number | null;
  totalTokens?: number | null;
  cacheReadInputTokens?: number | null;
  cacheWriteInputTokens?: number | null;
  /** Older field names some answers still carry. */
  cacheReadInputTokenCount?: number | null;
  cacheWriteInputTokenCount?: number | null;
  [key: string]: unknown;
}

/** A content block of an answer; unknown kinds are ignored. */
export interface BedrockContentBlockWire {
  text?: string;
  toolUse?: { toolUseId?: string; name?: string; input?: unknown; type?: string };
  reasoningContent?: { reasoningText?: { text?: string; signature?: string }; redactedContent?: string };
  [key: string]: unknown;
}

/** A Converse answer. */
export interface BedrockConverseResponseWire {
  output?: { message?: { role?: string; content?: BedrockContentBlockWire[] | null } | null } | null;
  stopReason?: string | null;
  usage?: BedrockUsageWire | null;
  metrics?: { latencyMs?: number } | null;
  additionalModelResponseFields?: unknown;
  /** An error body (`{"message": …}`), when one arrives with a 2xx. */
  message?: string;
}

/** `contentBlockDelta.delta`. */
export interface BedrockDeltaWire {
  text?: string;
  toolUse?: { input?: string };
  reasoningContent?: { text?: string; signature?: string; redactedContent?: string };
  [key: string]: unknown;
}

/**
 * One ConverseStream event payload: the member object of the event named by the frame's
 * `:event-type` header (`messageStart`, `contentBlockStart`, `contentBlockDelta`,
 * `contentBlockStop`, `messageStop`, `metadata`), or of an exception frame (`message`,
 * `originalStatusCode`, `originalMessage`). Bedrock adds a random padding field `p`.
 */
export interface BedrockStreamEventWire {
  role?: string;
  contentBlockIndex?: number;
  start?: { toolUse?: { toolUseId?: string; name?: string; type?: string } } | null;
  delta?: BedrockDeltaWire | null;
  stopReason?: string | null;
  usage?: BedrockUsageWire | null;
  metrics?: unknown;
  message?: string;
  originalStatusCode?: number;
  originalMessage?: string;
  [key: string]: unknown;
}

// ---------------------------------------------------------------------------------------------
// Embeddings (InvokeModel)

/** Titan Text Embeddings body: one text; `dimensions` 1024 (default), 512 or 256 (v2 only). */
export interface BedrockTitanEmbedRequest {
  inputText: string;
  dimensions?: number;
}

/** Cohere Embed body: at most 96 texts. */
export interface BedrockCohereEmbedRequest {
  texts: string[];
  input_type: 'search_document' | 'search_query' | 'classification' | 'clustering';
  output_dimension?: number;
}
