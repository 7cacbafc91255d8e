/**
 * The dialects of OpenAI-compatible servers, as data: one row per server family, chosen with a
 * provider's `dialect` setting. Conversions read these settings instead of testing server names.
 * @see ../../../../shared/reference/provider-wire-formats.md §4 (vLLM, llama.cpp, Ollama) and §5.4
 */

import { OPENAI_DIALECTS } from './openai-config-schema.js';

export { OPENAI_DIALECTS };
export type OpenAIDialectName = (typeof OPENAI_DIALECTS)[number];

/** How a dialect sends content arrays (see {@link OpenAIDialect.content}). */
export type ContentMode = 'parts' | 'joined-text' | 'string';

export interface OpenAIDialect {
  /** Field that carries the output limit. */
  outputLimitField: 'max_completion_tokens' | 'max_tokens';
  /**
   * How a reasoning request is sent: `reasoning_effort` (a string), the `reasoning` object as-is
   * (OpenRouter), or not at all.
   */
  reasoningParam: 'reasoning_effort' | 'reasoning' | 'none';
  /**
   * How an assistant turn's earlier reasoning is echoed in history: dropped, as `reasoning`
   * (vLLM ≥ 0.16, Ollama, OpenRouter), as `reasoning_content` (llama.cpp), or as
   * `reasoning_content` on tool-call turns only (DeepSeek thinking mode requires it there and
   * rejects it elsewhere).
   */
  echoReasoning: 'drop' | 'reasoning' | 'reasoning_content' | 'reasoning_content_on_tool_calls';
  /** Keep `reasoning_details` in history (OpenRouter understands them). */
  echoReasoningDetails: boolean;
  /** Whether the server understands `parallel_tool_calls` (others ignore or reject it). */
  parallelToolCalls: boolean;
  /**
   * How message `content` arrays are sent (the endpoint's `string_content` overrides it):
   * - `parts`: as the client gave them;
   * - `joined-text`: an array whose parts are all text (or refusal) goes as one string, the parts
   *   joined in order with a blank line between; an array with an image, audio or file part keeps
   *   its parts (llama.cpp, Ollama: older builds answer any array with "type must be string, but
   *   is array", newer ones take arrays for media; neither reads `cache_control` on a part);
   * - `string`: the server takes only string content (DeepSeek: "invalid type: sequence,
   *   expected a string"; Groq for system messages): text arrays are joined, media parts refused.
   */
  content: ContentMode;
  /** Whether a named `tool_choice` is honoured (llama.cpp treats it as `auto`: send `required` with only that tool instead). */
  namedToolChoice: boolean;
}

const base: OpenAIDialect = {
  outputLimitField: 'max_completion_tokens',
  reasoningParam: 'reasoning_effort',
  echoReasoning: 'drop',
  echoReasoningDetails: false,
  parallelToolCalls: true,
  content: 'parts',
  namedToolChoice: true,
};

/** Settings per dialect. */
export const DIALECTS: Readonly<Record<OpenAIDialectName, OpenAIDialect>> = Object.freeze({
  openai: base,
  vllm: { ...base, outputLimitField: 'max_tokens', echoReasoning: 'reasoning' },
  llamacpp: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', echoReasoning: 'reasoning_content', namedToolChoice: false, content: 'joined-text' },
  ollama: { ...base, outputLimitField: 'max_tokens', echoReasoning: 'reasoning', parallelToolCalls: false, content: 'joined-text' },
  deepseek: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', echoReasoning: 'reasoning_content_on_tool_calls', parallelToolCalls: false, content: 'string' },
  groq: { ...base, reasoningParam: 'reasoning_effort', content: 'string' },
  openrouter: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'reasoning', echoReasoning: 'reasoning', echoReasoningDetails: true },
  mistral: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', parallelToolCalls: true },
});
