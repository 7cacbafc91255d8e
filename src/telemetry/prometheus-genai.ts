import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { generationEnd, type GenerationEndEvent } from '../pipeline/state/events.js';
import type { GatewayMetrics } from '../pipeline/state/metrics.js';
import { operationName, timePerOutputTokenSeconds } from './genai-attributes.js';

/**
 * The Prometheus subscriber of the generation-end event: the GenAI quantities (token usage,
 * request duration, time to first token, time per output token) on `/metrics`, for the gateway
 * that owns `metrics`; cache hits are left out. Returns the unsubscribe function.
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-metrics/
 */
export function subscribeGenAiPrometheus(metrics: GatewayMetrics): () => void {
  const onEnd = (message: unknown) => {
    const { draft, latencyMs, metrics: owner } = message as GenerationEndEvent;
    // A cache hit is no provider's work: kept out of the provider duration, TTFT and token histograms.
    if (owner !== metrics || draft.cacheHit) return;
    // Only served catalog ids become label values: client-made names must not grow the series.
    const op = operationName(draft.api);
    const provider = draft.provider ?? '';
    const model = draft.servedModel ?? '';
    const labels = { gen_ai_operation_name: op, gen_ai_provider_name: provider, gen_ai_response_model: model };
    metrics.genAiDuration.observe({ gen_ai_operation_name: op, gen_ai_provider_name: provider, gen_ai_response_model: model, error_type: draft.status === 'success' ? '' : (draft.errorCode ?? 'error') }, latencyMs / 1000);
    const u = draft.usage;
    if (u?.promptTokens != null) metrics.genAiTokenUsage.observe({ gen_ai_operation_name: op, gen_ai_provider_name: provider, gen_ai_response_model: model, gen_ai_token_type: 'input' }, u.promptTokens);
    if (u?.completionTokens != null) metrics.genAiTokenUsage.observe({ gen_ai_operation_name: op, gen_ai_provider_name: provider, gen_ai_response_model: model, gen_ai_token_type: 'output' }, u.completionTokens);
    if (draft.streamed && draft.ttftMs !== null) metrics.genAiTtft.observe(labels, draft.ttftMs / 1000);
    const perToken = timePerOutputTokenSeconds(draft, latencyMs);
    if (perToken !== undefined) metrics.genAiTimePerOutputToken.observe(labels, perToken);
  };
  subscribe(generationEnd.name as string, onEnd);
  return () => unsubscribe(generationEnd.name as string, onEnd);
}
