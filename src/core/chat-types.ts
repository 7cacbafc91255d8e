import type { NormalizedProviderPreferences, PerformanceCutoffs } from '../config/provider-preferences-schema.js';
/**
 * The internal request format: the OpenAI chat format with the gateway fields. Every client API
 * (src/ingress/) converts its request into a {@link ChatRequest}; provider adapters
 * (src/providers/) convert from it at the edge. Output: stream-part.ts, chat-result.ts.
 * @see https://platform.openai.com/docs/api-reference/chat
 */

export type ContentPart =
  | { type: 'text'; text: string; cache_control?: { type: 'ephemeral'; ttl?: string } }
  | { type: 'image_url'; image_url: { url: string; detail?: 'auto' | 'low' | 'high' | 'original' } }
  | { type: 'input_audio'; input_audio: { data: string; format: string } }
  | { type: 'file'; file: { filename?: string; file_data?: string; file_id?: string } }
  | { type: 'refusal'; refusal: string };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * Provider reasoning state a client must echo back on the next turn (OpenRouter's
 * `reasoning_details`): Anthropic thinking signatures and redacted thinking, Gemini thought
 * signatures (with the `id` of the tool call they belong to).
 */
export interface ReasoningDetail {
  type: 'reasoning.text' | 'reasoning.encrypted' | 'reasoning.summary';
  text?: string;
  signature?: string;
  data?: string;
  /** Tool call id a signature belongs to (Gemini). */
  id?: string;
  /** Which provider format produced it, e.g. `anthropic-claude-v1`, `google-gemini-v1`. */
  format?: string;
  index?: number;
}

export type ChatMessage =
  | { role: 'system' | 'developer'; content: string | ContentPart[]; name?: string }
  | { role: 'user'; content: string | ContentPart[]; name?: string }
  | {
      role: 'assistant';
      content?: string | ContentPart[] | null;
      name?: string;
      tool_calls?: ToolCall[];
      refusal?: string | null;
      reasoning?: string | null;
      reasoning_details?: ReasoningDetail[];
    }
  | { role: 'tool'; content: string | ContentPart[]; tool_call_id: string };

export interface FunctionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Routing preferences (SPEC §2.1 `provider`), as normalised from the request (one definition, in config/). */
export type ProviderPreferences = NormalizedProviderPreferences;

/** Thresholds per percentile of an endpoint's live statistics (OpenRouter's `PercentileLatencyCutoffs`). */
export type { PerformanceCutoffs };

/** A model variant as routing applies it (`:nitro`, `:floor`, `:free` or the operator's). */
export interface ModelVariant {
  name: string;
  /** Preferences the variant sets; the request's own members win. */
  provider: ProviderPreferences;
  /** Only endpoints whose prompt, completion and request prices are all zero (`:free`). */
  freeOnly: boolean;
}

/** Gateway options (SPEC §2.1 `op`). */
export interface OpOptions {
  retention?: 'none' | number;
  tags?: string[];
  session?: string;
  /** Use the exact response cache for this request. */
  cache?: boolean;
  /** TTL of the cached answer, in seconds. */
  cache_ttl?: number;
}

/** A validated chat completion request. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  repetition_penalty?: number | null;
  min_p?: number | null;
  logit_bias?: Record<string, number> | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  tools?: FunctionTool[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean | null;
  response_format?: ResponseFormat;
  reasoning?: { effort?: ReasoningEffort; max_tokens?: number; exclude?: boolean; enabled?: boolean; summary?: 'auto' | 'concise' | 'detailed' };
  reasoning_effort?: ReasoningEffort | null;
  seed?: number | null;
  user?: string;
  /** Upstream prompt-cache routing key (OpenAI); also the gateway's sticky-routing key. */
  prompt_cache_key?: string;
  /** Automatic prompt caching (Anthropic's top-level `cache_control`). */
  cache_control?: { type: 'ephemeral'; ttl?: string };
  service_tier?: 'auto' | 'default' | 'flex' | 'priority' | 'scale';
  verbosity?: 'low' | 'medium' | 'high';
  modalities?: Array<'text' | 'image' | 'audio'>;
  metadata?: Record<string, string>;
  models?: string[];
  /** A preset of the config (`presets`) whose models, provider preferences, parameters and system prompt apply. */
  preset?: string;
  provider?: ProviderPreferences;
  op?: OpOptions;
  /**
   * Gateway-internal, never sent upstream: the variant asked for each model (`nitro`, `floor`,
   * `free` or an operator's), by model id, after the suffixes were taken off `model`/`models`.
   */
  variants?: Record<string, ModelVariant>;
  /** Gateway-internal: request fields accepted but not acted on, recorded as warnings. */
  warnings?: string[];
}

/** A validated legacy completion request. */
export interface CompletionRequest {
  model: string;
  prompt: string | string[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  logprobs?: number | null;
  echo?: boolean | null;
  suffix?: string | null;
  best_of?: number | null;
  seed?: number | null;
  user?: string;
  models?: string[];
  provider?: ProviderPreferences;
  op?: OpOptions;
}

/** OpenAI finish reasons as the gateway emits them (`error` only on a failed stream). */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'error';

/**
 * Token usage of one generation. `null` means "not reported", which is distinct from 0.
 * All counts are tokens.
 */
export interface Usage {
  promptTokens: number | null;
  completionTokens: number | null;
  /** Prompt tokens read from a prompt cache (included in promptTokens). */
  cachedTokens: number | null;
  /** Prompt tokens written to a prompt cache (included in promptTokens). */
  cacheWriteTokens: number | null;
  /** Reasoning tokens (included in completionTokens). */
  reasoningTokens: number | null;
  /** Where the counts came from: the upstream's report, or the gateway's tokenizer. */
  source: 'upstream' | 'estimated';
}
