import { computeCost, picoToUsdNumber } from '../../accounting/cost.js';
import { clampUsage, USAGE_CLAMPED } from '../../accounting/usage-bounds.js';
import type { PromptSize } from '../../accounting/estimate-tokens.js';
import type { Usage } from '../../core/chat-types.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { generationRow } from '../../store/generation-row.js';
import type { GenerationsTable } from '../../store/schema.js';
import { generationEnd, type GenerationEndEvent } from '../state/events.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { GenerationInput } from '../state/generation-input.js';
import type { OutputAccumulator } from '../attempt/output-accumulator.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * The finish-and-record stage: meter what an attempt produced, keep its text as retention
 * allows, and close the generation with exactly one record.
 */

/**
 * Put the served endpoint, usage (as reported, else estimated), cost and finish reason of an
 * attempt on the draft.
 * @returns the cost in USD, for the usage the client sees.
 */
export function meterAttempt(draft: GenerationDraft, target: ResolvedEndpoint, acc: OutputAccumulator, prompt: PromptSize): number {
  const costUsd = meterUsage(draft, target, acc.usageOr(prompt));
  draft.finishReason = acc.finish?.finishReason ?? null;
  draft.nativeFinishReason = acc.finish?.nativeFinishReason ?? null;
  return costUsd;
}

/**
 * Put the served endpoint, the usage and its cost on the draft.
 * @returns the cost in USD.
 */
export function meterUsage(draft: GenerationDraft, target: ResolvedEndpoint, reported: Usage): number {
  const { usage, warning } = clampUsage(reported);
  if (warning) draft.warnings.push(warning);
  const cost = computeCost(usage, target.endpoint.pricing);
  draft.usage = usage;
  draft.costPico = cost.total;
  draft.servedModel = target.model.id;
  draft.provider = target.provider.id;
  draft.endpoint = target.id;
  draft.upstreamModel = target.endpoint.upstream_model;
  return picoToUsdNumber(cost.total);
}

/** Keep the request and output text on the draft, unless retention is `none`. */
export function keepContent(draft: GenerationDraft, input: GenerationInput, acc: OutputAccumulator): void {
  keepRecordText(draft, input, { content: acc.text, reasoning: acc.reasoning || undefined, tool_calls: acc.toolCalls.length ? acc.toolCalls : undefined });
}

/** Keep the request text and `output` on the draft, unless retention is `none`. */
export function keepRecordText(draft: GenerationDraft, input: GenerationInput, output: unknown): void {
  if (draft.retention === 'none') return;
  draft.content = { request: input.ingress.recordedRequest(input.request), output };
}

/**
 * Close a generation: queue its one record, count it in the metrics and log one line. Every
 * accepted request ends here exactly once. With `records.durability: strict` returns a promise
 * settled once the record is committed (or its write failed and waits for a retry); never rejects.
 */
export function finishGeneration(rt: GatewayRuntime, draft: GenerationDraft): Promise<void> | void {
  const row = generationRow(draft, rt.config.records.keep_upstream_error_message);
  // A batch line's record is written by its worker, with the line's result (pipeline/batches/).
  const written = draft.captureRow ? draft.captureRow(row) : rt.writer.add(row);
  recordMetrics(rt, row, draft);
  if (generationEnd.hasSubscribers) generationEnd.publish({ draft, latencyMs: row.latency_ms, metrics: rt.metrics } satisfies GenerationEndEvent);
  rt.log.info(
    { reqId: row.request_id, generation: row.id, model: row.served_model ?? row.requested_model, provider: row.provider, status: row.status, code: row.error_code, streamed: draft.streamed, attempts: draft.attempts.length, prompt_tokens: row.prompt_tokens, completion_tokens: row.completion_tokens, ms: row.latency_ms, ttft_ms: row.ttft_ms, credential: draft.credential ?? undefined },
    'generation',
  );
  return written;
}

/** Count a finished generation in the Prometheus metrics. */
function recordMetrics(rt: GatewayRuntime, row: GenerationsTable, draft: GenerationDraft): void {
  const m = rt.metrics;
  // Only catalog ids become label values: a client's made-up model names must not grow the series.
  const asked = row.requested_model;
  const model = row.served_model ?? (rt.catalog.models.has(asked) ? asked : 'unknown');
  // A cache hit is no provider's success: counted with an empty provider (opinference_cache_lookups_total has hits).
  const provider = draft.cacheHit ? '' : (row.provider ?? '');
  m.generations.inc({ model, provider, status: row.status, code: row.error_code ?? '' });
  if (row.prompt_tokens) m.tokens.inc({ model, provider, direction: 'prompt' }, row.prompt_tokens);
  if (row.completion_tokens) m.tokens.inc({ model, provider, direction: 'completion' }, row.completion_tokens);
  if (draft.costPico > 0n) m.costUsd.inc({ model, provider }, Number(draft.costPico) / 1e12);
  m.latency.observe({ model, streamed: row.streamed ? 'true' : 'false' }, row.latency_ms / 1000);
  if (row.streamed && row.ttft_ms !== null) m.ttft.observe({ model }, row.ttft_ms / 1000);
  for (const a of draft.attempts) m.attempts.inc({ endpoint: a.endpoint, code: a.error_code ?? 'ok' });
  // Usage is clamped where it is metered (meterUsage); the writer counts only what it clamps itself.
  if (draft.warnings.some((w) => w.startsWith(USAGE_CLAMPED))) m.recordsClamped.inc();
}
