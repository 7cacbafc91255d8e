import type { OpenAIChoiceWire, OpenAIErrorWire, OpenAIResponseWire } from '../openai/openai-wire-types.js';

/**
 * What Azure OpenAI adds to OpenAI's wire (which it otherwise speaks as is, see
 * providers/openai/openai-wire-types.ts): the content filter's annotations.
 * @see ../../../../shared/reference/cloud-providers.md §3.6
 */

/**
 * One filter verdict per category: `hate`, `sexual`, `violence`, `self_harm` carry
 * `{filtered, severity: safe|low|medium|high}`; `jailbreak`, `indirect_attack`,
 * `protected_material_text`, `profanity` carry `{filtered, detected}`; `protected_material_code`
 * adds `citation`; `custom_blocklists` a list; a failed filter run `{error: {code, message}}`.
 */
export type AzureContentFilterResults = Record<string, unknown>;

/** A prompt's verdict: `prompt_filter_results[]` (older api-versions: `prompt_annotations[]`). */
export interface AzurePromptFilterResult {
  prompt_index?: number;
  content_filter_results?: AzureContentFilterResults;
}

/** A choice with Azure's annotations; streamed annotation-only chunks add `content_filter_offsets`. */
export interface AzureChoiceWire extends OpenAIChoiceWire {
  content_filter_results?: AzureContentFilterResults;
  content_filter_offsets?: { check_offset?: number; start_offset?: number; end_offset?: number };
}

/** A chat (or completion) body or chunk with Azure's annotations. */
export interface AzureResponseWire extends Omit<OpenAIResponseWire, 'choices'> {
  choices?: AzureChoiceWire[] | null;
  prompt_filter_results?: AzurePromptFilterResult[];
  prompt_annotations?: AzurePromptFilterResult[];
}

/**
 * Azure's error object: OpenAI's plus `innererror` (a blocked prompt: `code:
 * "ResponsibleAIPolicyViolation"`, `content_filter_result`, singular) and, on the Responses API,
 * `content_filters: [{blocked, source_type, content_filter_results}]`.
 */
export interface AzureErrorWire extends OpenAIErrorWire {
  status?: number;
  innererror?: { code?: string; content_filter_result?: AzureContentFilterResults; revised_prompt?: string };
  content_filters?: Array<{ blocked?: boolean; source_type?: string; content_filter_results?: AzureContentFilterResults }>;
}
