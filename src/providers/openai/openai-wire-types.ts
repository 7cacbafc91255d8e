/**
 * What OpenAI-compatible servers send back, loosely typed: real servers (vLLM, llama.cpp,
 * Ollama, Groq, DeepSeek, OpenRouter …) omit, null or rename fields, so every field is optional.
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */

export interface OpenAIUsage {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null; cache_write_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  /** DeepSeek's cache fields. */
  prompt_cache_hit_tokens?: number | null;
}

export interface OpenAIToolCallWire {
  index?: number;
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | Record<string, unknown> | null } | null;
}

export interface OpenAIMessageWire {
  role?: string;
  /** A string; Mistral sends an array of text / thinking parts. */
  content?: string | Array<Record<string, unknown>> | null;
  refusal?: string | null;
  reasoning?: string | null;
  reasoning_content?: string | null;
  tool_calls?: OpenAIToolCallWire[] | null;
}

export interface OpenAIChoiceWire {
  index?: number;
  message?: OpenAIMessageWire;
  delta?: OpenAIMessageWire;
  /** Legacy completions. */
  text?: string | null;
  /** `"error"` when the server failed mid-generation (OpenRouter), with `error` beside it. */
  finish_reason?: string | null;
  error?: OpenAIErrorWire | string;
  /** Log probabilities (`{content: [...], refusal}` on chat), relayed as sent. */
  logprobs?: Record<string, unknown> | null;
}

export interface OpenAIErrorWire {
  message?: string;
  type?: string | null;
  code?: string | number | null;
  param?: string | null;
  metadata?: Record<string, unknown>;
}

export interface OpenAIResponseWire {
  id?: string;
  object?: string;
  model?: string;
  system_fingerprint?: string | null;
  choices?: OpenAIChoiceWire[] | null;
  usage?: OpenAIUsage | null;
  error?: OpenAIErrorWire | string;
}
