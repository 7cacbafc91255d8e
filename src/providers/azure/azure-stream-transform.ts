import type { StreamTransform, UpstreamOperation } from '../types.js';
import { createOpenAIStreamTransform } from '../openai/openai-stream-transform.js';
import { createOpenAIResponsesStreamTransform } from '../openai/native/responses.js';
import { AzureFilterCollector } from './azure-content-filter.js';
import type { AzureResponseWire } from './azure-wire-types.js';

/** Text that marks a chunk carrying content-filter annotations (checked before parsing it twice). */
const ANNOTATION = /filter_results|prompt_annotations/;

/**
 * Reads an Azure OpenAI stream: the `openai` kind's transform (chat, completions, Responses),
 * which already turns Azure's extra chunks into nothing — the first chunk with an empty `id`,
 * no choices and `prompt_filter_results`, and the annotation-only chunks of the asynchronous
 * filter (`content_filter_results`, `content_filter_offsets`, empty delta) — so clients never
 * see them; a stream that ends with `finish_reason: "content_filter"` finishes as
 * `content_filter`. The annotations are collected for the record
 * ({@link StreamTransform.providerMetadata}); a chunk is parsed a second time only when its text
 * names them.
 */
export function createAzureStreamTransform(providerId: string, operation: UpstreamOperation): StreamTransform {
  const inner = operation === 'responses' ? createOpenAIResponsesStreamTransform(providerId) : createOpenAIStreamTransform(providerId, operation);
  const filter = new AzureFilterCollector();
  const outer: StreamTransform = {
    push(event) {
      if (operation !== 'responses' && ANNOTATION.test(event.data)) {
        try {
          const chunk = JSON.parse(event.data) as AzureResponseWire | null;
          if (chunk !== null && typeof chunk === 'object') filter.read(chunk);
        } catch {
          // not JSON: the inner transform reports it
        }
      }
      return inner.push(event);
    },
    flush: () => inner.flush(),
    providerMetadata: () => {
      const meta = filter.metadata();
      return meta ? { ...meta } : null;
    },
  };
  if (inner.ended) outer.ended = inner.ended.bind(inner);
  if (inner.warnings) outer.warnings = inner.warnings.bind(inner);
  if (inner.usage) outer.usage = inner.usage.bind(inner);
  return outer;
}
