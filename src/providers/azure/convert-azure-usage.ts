/**
 * Azure OpenAI reports usage exactly as OpenAI does (`prompt_tokens`, `completion_tokens`,
 * `prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`; the
 * Responses API's `input_tokens` / `output_tokens`): the `openai` kind's conversion is used as is.
 */
export { convertOpenAIUsage as convertAzureUsage } from '../openai/convert-openai-usage.js';
