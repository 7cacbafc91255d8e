/**
 * Azure OpenAI's `finish_reason` values are OpenAI's; a filtered answer ends with
 * `content_filter` (HTTP 200, truncated content), which maps to our `content_filter`. The
 * `openai` kind's mapping is used as is.
 */
export { mapOpenAIFinishReason as mapAzureFinishReason } from '../openai/map-openai-finish-reason.js';
