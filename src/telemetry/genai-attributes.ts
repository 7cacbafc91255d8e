import type { ChatRequest } from '../core/chat-types.js';
import { requestedOutputLimit } from '../core/output-limit.js';
import { ingressForApi } from '../ingress/registry.js';
import type { ClientApi } from '../ingress/types.js';
import type { GenerationDraft } from '../pipeline/state/generation-draft.js';
import type { RecordedAttempt } from '../store/generation-row.js';
import type { ResolvedEndpoint } from '../routing/resolved-endpoint.js';
import type { McpToolCallOutcome } from '../mcp/mcp-gateway.js';

/**
 * Span and metric attributes of a generation, named per the OpenTelemetry GenAI semantic
 * conventions, plus the gateway's own under `op.`. Pure functions: values in, attributes out.
 * Token counts are tokens, times ms, cost USD.
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/
 */

/** An attribute map as OpenTelemetry takes it. */
export type Attributes = Record<string, string | number | boolean | string[] | undefined>;

/** `gen_ai.operation.name` of a client API: what its adapter declares (`genAiOperation`). */
export function operationName(api: ClientApi): string {
  return ingressForApi(api).genAiOperation;
}

/** Span name per the conventions: `{gen_ai.operation.name} {gen_ai.request.model}`. */
export function spanName(api: ClientApi, model: string): string {
  return model ? `${operationName(api)} ${model}` : operationName(api);
}

/** Attributes known when a request passed validation (the server span). */
export function requestAttributes(draft: GenerationDraft, chat: ChatRequest): Attributes {
  return {
    'gen_ai.operation.name': operationName(draft.api),
    'gen_ai.request.model': chat.model,
    'gen_ai.request.max_tokens': requestedOutputLimit(chat),
    'gen_ai.request.temperature': chat.temperature ?? undefined,
    'gen_ai.request.top_p': chat.top_p ?? undefined,
    'op.generation_id': draft.id,
    'op.key_id': draft.keyId ?? undefined,
    'op.streamed': draft.streamed,
  };
}

/** What the generation produced (server span, at its end). */
export function resultAttributes(draft: GenerationDraft): Attributes {
  const u = draft.usage;
  return {
    'gen_ai.operation.name': operationName(draft.api),
    'gen_ai.response.id': draft.id,
    'gen_ai.response.model': draft.servedModel ?? undefined,
    'gen_ai.provider.name': draft.provider ?? undefined,
    'gen_ai.usage.input_tokens': u?.promptTokens ?? undefined,
    'gen_ai.usage.output_tokens': u?.completionTokens ?? undefined,
    'gen_ai.response.finish_reasons': draft.finishReason ? [draft.finishReason] : undefined,
    'error.type': draft.status === 'success' ? undefined : (draft.errorCode ?? 'error'),
    'op.generation_id': draft.id,
    'op.key_id': draft.keyId ?? undefined,
    'op.cost_usd': Number(draft.costPico) / 1e12,
    'op.ttft_ms': draft.ttftMs ?? undefined,
    'op.usage_source': u?.source ?? undefined,
    'op.attempts': draft.attempts.length,
    'op.status': draft.status,
  };
}

const addresses = new WeakMap<ResolvedEndpoint['provider'], string | undefined>();

/** The host of a provider's `base_url` (parsed once per provider config). */
function serverAddress(provider: ResolvedEndpoint['provider']): string | undefined {
  if (addresses.has(provider)) return addresses.get(provider);
  let host: string | undefined;
  try {
    host = new URL(provider.base_url ?? '').hostname || undefined;
  } catch {
    host = undefined;
  }
  addresses.set(provider, host);
  return host;
}

/** An upstream attempt's span attributes at its start. */
export function attemptStartAttributes(draft: GenerationDraft, target: ResolvedEndpoint, index: number, reason: string): Attributes {
  return {
    'gen_ai.operation.name': operationName(draft.api),
    'gen_ai.provider.name': target.provider.id,
    'gen_ai.request.model': target.endpoint.upstream_model,
    'server.address': serverAddress(target.provider),
    'op.endpoint': target.id,
    'op.model': target.model.id,
    'op.attempt.index': index,
    'op.attempt.reason': reason,
    'op.generation_id': draft.id,
  };
}

/** An attempt's attributes at its end; usage only for the attempt that answered. */
export function attemptEndAttributes(draft: GenerationDraft, attempt: RecordedAttempt, answered: boolean): Attributes {
  const attrs: Attributes = {
    'http.response.status_code': attempt.status ?? undefined,
    'error.type': attempt.error_code ?? undefined,
    'op.latency_ms': attempt.latency_ms,
    // The label of the provider's `api_keys` entry (never the key); unset with one key.
    'op.attempt.credential': attempt.credential,
  };
  if (answered) {
    const u = draft.usage;
    attrs['gen_ai.response.model'] = draft.upstreamModel ?? undefined;
    attrs['gen_ai.response.id'] = draft.id;
    attrs['gen_ai.usage.input_tokens'] = u?.promptTokens ?? undefined;
    attrs['gen_ai.usage.output_tokens'] = u?.completionTokens ?? undefined;
    attrs['gen_ai.response.finish_reasons'] = draft.finishReason ? [draft.finishReason] : undefined;
  }
  return attrs;
}

/** Drop the undefined values (OpenTelemetry warns on them). */
export function defined(attrs: Attributes): Record<string, string | number | boolean | string[]> {
  const out: Record<string, string | number | boolean | string[]> = {};
  for (const k in attrs) {
    const v = attrs[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/**
 * Seconds per output token after the first (the conventions' `time_per_output_token`), or
 * undefined when it is not measurable (not streamed, fewer than two output tokens).
 */
export function timePerOutputTokenSeconds(draft: GenerationDraft, latencyMs: number): number | undefined {
  const out = draft.usage?.completionTokens ?? 0;
  if (!draft.streamed || draft.ttftMs === null || out < 2) return undefined;
  return Math.max(0, latencyMs - draft.ttftMs) / 1000 / (out - 1);
}

/**
 * Attributes of an MCP tool call's `execute_tool` span: the GenAI conventions' tool attributes
 * (`gen_ai.tool.name`, `gen_ai.tool.call.id` when the model's call id is known, `gen_ai.tool.type`
 * `extension`: run by the gateway, outside the model), the MCP conventions' method and session,
 * `mcp.server` (the `mcp_servers` id) and the gateway's `op.*` (status, sizes in bytes).
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/#execute-tool-span
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/mcp/
 */
export function mcpToolCallAttributes(o: McpToolCallOutcome): Attributes {
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': o.tool,
    'gen_ai.tool.call.id': o.callId,
    'gen_ai.tool.type': 'extension',
    'mcp.method.name': 'tools/call',
    'mcp.session.id': o.sessionId || undefined,
    'mcp.server': o.server,
    'op.key_id': o.keyId,
    'op.request_id': o.requestId,
    'op.mcp.status': o.status,
    'op.mcp.request_bytes': o.argumentBytes,
    'op.mcp.response_bytes': o.resultBytes,
    'error.type': o.error === undefined ? (o.status === 'tool_error' ? 'tool_error' : undefined) : String(o.error.code),
  };
}
