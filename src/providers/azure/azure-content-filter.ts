import type { AzureContentFilterResults, AzurePromptFilterResult, AzureResponseWire } from './azure-wire-types.js';

/**
 * Azure's content-filter annotations as the generation record keeps them
 * (`detail.provider_metadata`): `prompt_filter_results` (one entry per prompt) and
 * `content_filter_results` (the answer's verdicts per category, the last annotation of each
 * category winning in a stream), plus `filtered`: the categories whose verdict was
 * `filtered: true`. Never sent to clients (they get OpenAI's shapes only).
 */
export interface AzureFilterMetadata {
  prompt_filter_results?: AzurePromptFilterResult[];
  content_filter_results?: AzureContentFilterResults;
  filtered?: string[];
}

/** The categories of a verdict object marked `filtered: true`. */
export function filteredCategories(results: AzureContentFilterResults | undefined): string[] {
  if (!results || typeof results !== 'object') return [];
  return Object.entries(results)
    .filter(([, v]) => v !== null && typeof v === 'object' && (v as { filtered?: unknown }).filtered === true)
    .map(([k]) => k);
}

/** Collects the annotations of one answer (a body, or a stream's chunks) for the record. */
export class AzureFilterCollector {
  private prompt: AzurePromptFilterResult[] | undefined;
  private content: AzureContentFilterResults | undefined;

  /** Read the annotations of one body or chunk (choice 0's verdicts). */
  read(body: AzureResponseWire): void {
    const prompt = body.prompt_filter_results ?? body.prompt_annotations;
    if (Array.isArray(prompt) && prompt.length > 0) this.prompt = [...(this.prompt ?? []), ...prompt];
    const choice = Array.isArray(body.choices) ? body.choices.find((c) => (c.index ?? 0) === 0) : undefined;
    const results = choice?.content_filter_results;
    if (results && typeof results === 'object' && Object.keys(results).length > 0) this.content = { ...(this.content ?? {}), ...results };
  }

  /** What was collected, or null when the upstream sent no annotation. */
  metadata(): AzureFilterMetadata | null {
    if (this.prompt === undefined && this.content === undefined) return null;
    const filtered = [...new Set([...(this.prompt ?? []).flatMap((p) => filteredCategories(p.content_filter_results)), ...filteredCategories(this.content)])];
    return {
      ...(this.prompt !== undefined ? { prompt_filter_results: this.prompt } : {}),
      ...(this.content !== undefined ? { content_filter_results: this.content } : {}),
      ...(filtered.length > 0 ? { filtered } : {}),
    };
  }
}
