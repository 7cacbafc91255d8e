/**
 * The dialects of OpenAI-compatible servers, as data: one row per server family, chosen with a
 * provider's `dialect` setting. Conversions read these settings instead of testing server names.
 * @see ../../../../shared/reference/provider-wire-formats.md §4 (vLLM, llama.cpp, Ollama) and §5.4
 */

export const OPENAI_DIALECTS = ['openai', 'vllm', 'llamacpp', 'ollama', 'deepseek', 'groq', 'openrouter', 'mistral'] as const;
export type OpenAIDialectName = (typeof OPENAI_DIALECTS)[number];

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
   * Whether the server takes only string `content` (DeepSeek: "invalid type: sequence, expected
   * a string"; Groq for system messages): text-only content arrays are sent joined.
   */
  stringContent: boolean;
  /** Whether a named `tool_choice` is honoured (llama.cpp treats it as `auto`: send `required` with only that tool instead). */
  namedToolChoice: boolean;
}

const base: OpenAIDialect = {
  outputLimitField: 'max_completion_tokens',
  reasoningParam: 'reasoning_effort',
  echoReasoning: 'drop',
  echoReasoningDetails: false,
  parallelToolCalls: true,
  stringContent: false,
  namedToolChoice: true,
};

/** Settings per dialect. */
export const DIALECTS: Readonly<Record<OpenAIDialectName, OpenAIDialect>> = Object.freeze({
  openai: base,
  vllm: { ...base, outputLimitField: 'max_tokens', echoReasoning: 'reasoning' },
  llamacpp: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', echoReasoning: 'reasoning_content', namedToolChoice: false },
  ollama: { ...base, outputLimitField: 'max_tokens', echoReasoning: 'reasoning', parallelToolCalls: false },
  deepseek: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', echoReasoning: 'reasoning_content_on_tool_calls', parallelToolCalls: false, stringContent: true },
  groq: { ...base, reasoningParam: 'reasoning_effort', stringContent: true },
  openrouter: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'reasoning', echoReasoning: 'reasoning', echoReasoningDetails: true },
  mistral: { ...base, outputLimitField: 'max_tokens', reasoningParam: 'none', parallelToolCalls: true },
});
