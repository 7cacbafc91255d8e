import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TelemetryConfig } from '../config/schema.js';
import { attemptEnd, attemptStart, generationEnd, generationStart, mcpToolCallEnd, type AttemptEndEvent, type AttemptStartEvent, type GenerationEndEvent, type GenerationStartEvent, type McpToolCallEndEvent } from '../pipeline/state/events.js';
import { attemptEndAttributes, attemptStartAttributes, defined, mcpToolCallAttributes, operationName, requestAttributes, resultAttributes, spanName, timePerOutputTokenSeconds } from './genai-attributes.js';
import type { Telemetry, TelemetryOptions } from './telemetry.js';

/**
 * The OpenTelemetry subscriber: loaded (dynamically) only when an OTLP endpoint is configured.
 * It turns Fastify's request-handler channel, the gateway's generation and attempt events and
 * undici's response-headers channel into one trace per request (a server span, one client span
 * per upstream attempt), and the GenAI metrics into OTLP instruments.
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/
 */

const propagator = new W3CTraceContextPropagator();
/** Routes that get no span: probes and scrapes. */
const UNTRACED = new Set(['/metrics', '/health', '/ready']);

interface RequestTrace {
  span: Span;
  context: Context;
  /** Attempt spans by attempt index. */
  attempts: Map<number, Span>;
  /** The server span has ended (once, on the raw response's 'close'). */
  ended: boolean;
}

interface FastifyStore {
  request: FastifyRequest;
  reply: FastifyReply;
  async?: boolean;
}

/**
 * Forwards ended spans to a BatchSpanProcessor but never lets more than `maxQueue` wait: the
 * rest are dropped and counted, so exporting never holds memory or time of a request.
 */
export class BoundedSpanProcessor implements SpanProcessor {
  private queued = 0;
  dropped = 0;
  readonly inner: BatchSpanProcessor;

  constructor(exporter: SpanExporter, private readonly maxQueue: number) {
    const counting: SpanExporter = {
      // A batch leaves the count when its export is done: a slow collector holds the room.
      export: (spans, done) => {
        exporter.export(spans, (result) => {
          this.queued = Math.max(0, this.queued - spans.length);
          done(result);
        });
      },
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    };
    // Delay and export timeout stay the SDK's (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_EXPORT_TIMEOUT).
    this.inner = new BatchSpanProcessor(counting, { maxQueueSize: maxQueue, maxExportBatchSize: Math.min(512, maxQueue) });
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & 1) === 0) return;
    if (this.queued >= this.maxQueue) {
      this.dropped++;
      return;
    }
    this.queued++;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/** Start tracing and metrics over OTLP/HTTP; the endpoints, headers, sampler and resource come from the `OTEL_*` environment. */
export async function startOpenTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  const { config, traces: tracesOn, metrics: metricsOn } = options;
  const detected = await detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'opinference' }).merge(detected);
  const processor = tracesOn ? new BoundedSpanProcessor(new OTLPTraceExporter(), config.max_queue_size) : undefined;
  const tracerProvider = processor ? new BasicTracerProvider({ resource, spanProcessors: [processor] }) : undefined;
  const tracer = tracerProvider?.getTracer('opinference');
  const meterProvider = metricsOn
    ? new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis: options.metricIntervalMs ?? 60_000 })] })
    : undefined;
  const subscriptions: Array<[string, (msg: unknown) => void]> = [];
  const on = (name: string, fn: (msg: never) => void) => {
    subscriptions.push([name, fn as (msg: unknown) => void]);
    subscribe(name, fn as (msg: unknown) => void);
  };
  const openSpans = tracer ? subscribeTraces(tracer, config, on) : () => 0;
  if (meterProvider) subscribeMetrics(meterProvider, on);
  return {
    droppedSpans: () => processor?.dropped ?? 0,
    openServerSpans: openSpans,
    async flush() {
      await tracerProvider?.forceFlush();
      await meterProvider?.forceFlush();
    },
    async shutdown() {
      for (const [name, fn] of subscriptions) unsubscribe(name, fn);
      await tracerProvider?.shutdown();
      await meterProvider?.shutdown();
    },
  };
}

/** Subscribe the tracing channels; returns how many server spans are open (started, not yet ended). */
function subscribeTraces(tracer: Tracer, config: TelemetryConfig, on: (name: string, fn: (msg: never) => void) => void): () => number {
  const byRequest = new Map<string, RequestTrace>();
  /** Attempt spans by the span id sent upstream in `traceparent` (for undici's events). */
  const bySpanId = new Map<string, Span>();

  const endRequest = ({ request, reply }: FastifyStore) => {
    const t = byRequest.get(String(request.id));
    if (!t || t.ended) return;
    t.ended = true;
    byRequest.delete(String(request.id));
    const status = reply.statusCode;
    t.span.setAttribute('http.response.status_code', status);
    if (status >= 500) t.span.setStatus({ code: SpanStatusCode.ERROR });
    for (const s of t.attempts.values()) {
      bySpanId.delete(s.spanContext().spanId);
      s.end();
    }
    t.span.end();
  };
  on('tracing:fastify.request.handler:start', (store: FastifyStore) => {
    const { request } = store;
    const route = request.routeOptions.url ?? request.url.split('?')[0]!;
    if (UNTRACED.has(route)) return;
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
    const span = tracer.startSpan(`${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': request.method, 'http.route': route, 'url.path': request.url.split('?')[0], 'op.request_id': String(request.id) },
    }, parent);
    byRequest.set(String(request.id), { span, context: trace.setSpan(parent, span), attempts: new Map(), ended: false });
    store.reply.raw.once('close', () => endRequest(store));
  });
  // The server span ends when the response really ends: Fastify publishes no asyncEnd for a
  // hijacked (streamed) reply, so its end/asyncEnd events cannot end it. 'close' comes once for
  // every response — finished, failed or abandoned by the client.
  on('tracing:fastify.request.handler:error', (store: FastifyStore & { error?: Error }) => {
    const t = byRequest.get(String(store.request.id));
    if (t && store.error) t.span.recordException(store.error);
  });

  on(generationStart.name as string, ({ draft, chat }: GenerationStartEvent) => {
    const t = byRequest.get(draft.requestId);
    if (!t) return;
    t.span.updateName(spanName(draft.api, chat.model));
    t.span.setAttributes(defined(requestAttributes(draft, chat)));
  });
  on(attemptStart.name as string, ({ draft, target, index, reason, propagation }: AttemptStartEvent) => {
    const t = byRequest.get(draft.requestId);
    if (!t) return;
    const span = tracer.startSpan(spanName(draft.api, target.endpoint.upstream_model), { kind: SpanKind.CLIENT, attributes: defined(attemptStartAttributes(draft, target, index, reason)) }, t.context);
    t.attempts.set(index, span);
    propagator.inject(trace.setSpan(t.context, span), propagation, defaultTextMapSetter);
    if (span.isRecording()) bySpanId.set(span.spanContext().spanId, span);
  });
  on(attemptEnd.name as string, ({ draft, index, attempt, error }: AttemptEndEvent) => {
    const t = byRequest.get(draft.requestId);
    const span = t?.attempts.get(index);
    if (!t || !span) return;
    t.attempts.delete(index);
    bySpanId.delete(span.spanContext().spanId);
    span.setAttributes(defined(attemptEndAttributes(draft, attempt, error === undefined)));
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.end();
  });
  on(generationEnd.name as string, ({ draft }: GenerationEndEvent) => {
    const t = byRequest.get(draft.requestId);
    if (!t) return;
    t.span.setAttributes(defined(resultAttributes(draft)));
    if (draft.cacheHit) t.span.setAttribute('op.cache_hit', true);
    if (draft.status === 'error') t.span.setStatus({ code: SpanStatusCode.ERROR, message: draft.errorCode ?? undefined });
    if (config.capture_content && draft.retention !== 'none' && draft.content) {
      t.span.setAttribute('gen_ai.input.messages', JSON.stringify(draft.content.request));
      t.span.setAttribute('gen_ai.output.messages', JSON.stringify(draft.content.output));
    }
  });
  // An MCP tool call (issue 22 item 4): an `execute_tool` span, under the request's server span
  // when a Responses tool loop made it (its request id), else a trace of its own.
  on(mcpToolCallEnd.name as string, ({ outcome, startedAt }: McpToolCallEndEvent) => {
    const parent = outcome.requestId === undefined ? undefined : byRequest.get(outcome.requestId)?.context;
    const span = tracer.startSpan(`execute_tool ${outcome.tool}`, { kind: SpanKind.INTERNAL, startTime: startedAt, attributes: defined(mcpToolCallAttributes(outcome)) }, parent ?? ROOT_CONTEXT);
    if (outcome.status === 'error' || outcome.status === 'refused') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error?.message });
    if (config.capture_content && outcome.arguments !== undefined && (outcome.key.caller as { retention?: unknown } | undefined)?.retention !== 'none') {
      span.setAttribute('gen_ai.tool.call.arguments', JSON.stringify(outcome.arguments));
      if (outcome.result !== undefined) span.setAttribute('gen_ai.tool.call.result', JSON.stringify(outcome.result));
    }
    span.end(startedAt + outcome.latencyMs);
  });
  // undici: when the upstream's response headers arrive (time to headers on the attempt span).
  on('undici:request:headers', ({ request, response }: { request: { headers: unknown }; response: { statusCode: number } }) => {
    if (bySpanId.size === 0 || !Array.isArray(request.headers)) return;
    const h = request.headers as string[];
    for (let i = 0; i < h.length - 1; i += 2) {
      if (String(h[i]).toLowerCase() !== 'traceparent') continue;
      const span = bySpanId.get(String(h[i + 1]).split('-')[2] ?? '');
      span?.addEvent('upstream.response_headers', { 'http.response.status_code': response.statusCode });
      return;
    }
  });
  return () => byRequest.size;
}

function subscribeMetrics(meterProvider: MeterProvider, on: (name: string, fn: (msg: never) => void) => void): void {
  const meter = meterProvider.getMeter('opinference');
  const tokenUsage = meter.createHistogram('gen_ai.client.token.usage', { unit: '{token}', description: 'Tokens used per generation, by gen_ai.token.type (input, output).', advice: { explicitBucketBoundaries: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864] } });
  const duration = meter.createHistogram('gen_ai.server.request.duration', { unit: 's', description: 'Generation duration.', advice: { explicitBucketBoundaries: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92] } });
  const ttft = meter.createHistogram('gen_ai.server.time_to_first_token', { unit: 's', description: 'Time to the first generated token of streamed generations.', advice: { explicitBucketBoundaries: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0] } });
  const tpot = meter.createHistogram('gen_ai.server.time_per_output_token', { unit: 's', description: 'Time per output token after the first, of streamed generations.', advice: { explicitBucketBoundaries: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5] } });
  on(generationEnd.name as string, ({ draft, latencyMs }: GenerationEndEvent) => {
    if (draft.cacheHit) return; // no provider's work: kept out of the provider histograms
    const attrs = defined({
      'gen_ai.operation.name': operationName(draft.api),
      'gen_ai.provider.name': draft.provider ?? undefined,
      'gen_ai.request.model': draft.servedModel ?? undefined,
      'gen_ai.response.model': draft.servedModel ?? undefined,
      'error.type': draft.status === 'success' ? undefined : (draft.errorCode ?? 'error'),
    });
    duration.record(latencyMs / 1000, attrs);
    const u = draft.usage;
    if (u?.promptTokens != null) tokenUsage.record(u.promptTokens, { ...attrs, 'gen_ai.token.type': 'input' });
    if (u?.completionTokens != null) tokenUsage.record(u.completionTokens, { ...attrs, 'gen_ai.token.type': 'output' });
    if (draft.streamed && draft.ttftMs !== null) ttft.record(draft.ttftMs / 1000, attrs);
    const perToken = timePerOutputTokenSeconds(draft, latencyMs);
    if (perToken !== undefined) tpot.record(perToken, attrs);
  });
}
