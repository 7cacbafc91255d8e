/**
 * OpenTelemetry export (issue 13): the gateway's traces and GenAI metrics as a real OTLP/HTTP
 * receiver on loopback gets them from the SDK's exporters (JSON encoding).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hasSubscribers } from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { signalsFromEnv, startTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A loopback OTLP/HTTP receiver: keeps every JSON body posted to /v1/traces and /v1/metrics. */
class OtlpReceiver {
  readonly traces: Json[] = [];
  readonly metrics: Json[] = [];
  private server: Server | undefined;
  origin = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
        if (req.url === '/v1/traces') this.traces.push(body);
        else if (req.url === '/v1/metrics') this.metrics.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  spans(): Json[] {
    return this.traces.flatMap((b) => (b.resourceSpans as Json[]).flatMap((rs) => (rs.scopeSpans as Json[]).flatMap((ss) => ss.spans as Json[])));
  }

  resourceAttributes(): Json {
    return attrs(this.traces[0]!.resourceSpans[0].resource.attributes);
  }

  metricNames(): string[] {
    return this.metrics.flatMap((b) => (b.resourceMetrics as Json[]).flatMap((rm) => (rm.scopeMetrics as Json[]).flatMap((sm) => (sm.metrics as Json[]).map((m) => m.name as string))));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

/** OTLP key-value list to a plain object. */
function attrs(list: Json[] | undefined): Json {
  const out: Json = {};
  for (const { key, value } of list ?? []) {
    if ('stringValue' in value) out[key] = value.stringValue;
    else if ('intValue' in value) out[key] = Number(value.intValue);
    else if ('doubleValue' in value) out[key] = value.doubleValue;
    else if ('boolValue' in value) out[key] = value.boolValue;
    else if ('arrayValue' in value) out[key] = (value.arrayValue.values as Json[]).map((v) => v.stringValue);
  }
  return out;
}

const SERVER = 2;
const CLIENT = 3;
const STATUS_ERROR = 2;

const answer = {
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'beta-model-v2', choices: [{ index: 0, message: { role: 'assistant', content: 'the secret answer' }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
};
const streamed = {
  sse: [
    JSON.stringify({ choices: [{ index: 0, delta: { content: 'one ' }, finish_reason: null }] }),
    JSON.stringify({ choices: [{ index: 0, delta: { content: 'two' }, finish_reason: null }] }),
    JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }),
  ],
};

test('off without an endpoint: the SDK is imported by one module, only dynamically, and no channel has a subscriber', async () => {
  assert.equal(await startTelemetry({}, { capture_content: false, max_queue_size: 10 }), undefined);
  for (const name of ['opinference:generation:start', 'opinference:attempt:start', 'opinference:attempt:end', 'tracing:fastify.request.handler:start', 'undici:request:headers']) {
    assert.equal(hasSubscribers(name), false, name);
  }
  const importers: string[] = [];
  const otelUsers: string[] = [];
  const srcDir = fileURLToPath(new URL('../../src', import.meta.url));
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (file.endsWith('.ts')) {
        const text = readFileSync(file, 'utf8');
        if (/from '@opentelemetry\//.test(text)) importers.push(relative(srcDir, file));
        if (/otel\.js'/.test(text)) otelUsers.push(relative(srcDir, file));
      }
    }
  };
  walk(srcDir);
  assert.deepEqual(importers, [join('telemetry', 'otel.ts')]);
  assert.deepEqual(otelUsers, [join('telemetry', 'telemetry.ts')]);
  const entry = readFileSync(join(srcDir, 'telemetry', 'telemetry.ts'), 'utf8');
  assert.equal(entry.match(/otel\.js'/g)!.length, 1);
  assert.match(entry, /await import\('\.\/otel\.js'\)/);
});

test('the export queue is bounded: spans beyond it are dropped and counted, never waited for', async () => {
  const { BoundedSpanProcessor } = await import('../../src/telemetry/otel.js');
  const exported: unknown[] = [];
  // A collector that does not answer until told to.
  const pending: Array<() => void> = [];
  let answering = false;
  const exporter = {
    export: (spans: unknown[], done: (r: { code: number }) => void) => {
      exported.push(...spans);
      if (answering) done({ code: 0 });
      else pending.push(() => done({ code: 0 }));
    },
    shutdown: async () => {},
  };
  const processor = new BoundedSpanProcessor(exporter as never, 3);
  const span = (sampled: boolean) => ({ resource: { asyncAttributesPending: false }, spanContext: () => ({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: sampled ? 1 : 0 }) }) as never;
  for (let i = 0; i < 5; i++) processor.onEnd(span(true));
  processor.onEnd(span(false));
  assert.equal(processor.dropped, 2);
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(exported.length, 3, 'a full batch goes out at once');
  processor.onEnd(span(true));
  assert.equal(processor.dropped, 3, 'no room while the collector has not answered');
  answering = true;
  for (const done of pending.splice(0)) done();
  processor.onEnd(span(true));
  assert.equal(processor.dropped, 3, 'room again once exported');
  await processor.shutdown();
});

describe('OpenTelemetry export to a loopback OTLP receiver', () => {
  const receiver = new OtlpReceiver();
  let alpha: Upstream;
  let beta: Upstream;
  let gw: TestGateway;
  let telemetry: Telemetry | undefined;

  before(async () => {
    await receiver.start();
    alpha = await startUpstream();
    beta = await startUpstream();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.origin;
    process.env.OTEL_SERVICE_NAME = 'gateway-under-test';
    process.env.OTEL_RESOURCE_ATTRIBUTES = 'deployment.environment.name=test';
    process.env.OTEL_METRIC_EXPORT_INTERVAL = '600000';
    const config = {
      providers: [
        { id: 'alpha', kind: 'openai', base_url: alpha.url },
        { id: 'beta', kind: 'openai', base_url: beta.url },
      ],
      models: [{
        id: 'test/model', context_length: 8192,
        endpoints: ['alpha', 'beta'].map((p) => ({ provider: p, upstream_model: `${p}-model`, pricing: { prompt: 1, completion: 2 }, supported_parameters: ['temperature', 'max_tokens'] })),
      }],
      retention: 30,
      telemetry: { capture_content: true },
    };
    telemetry = await startTelemetry(process.env, { capture_content: true, max_queue_size: 2048 });
    gw = await startGateway(config, { telemetry });
  });
  after(async () => {
    await gw.close();
    await alpha.close();
    await beta.close();
    await receiver.close();
  });

  const post = (body: Json, headers: Record<string, string> = {}) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  test('no endpoint configured: nothing is started', () => {
    assert.deepEqual(signalsFromEnv({}), { traces: false, metrics: false, metricIntervalMs: undefined });
    return startTelemetry({ OTEL_EXPORTER_OTLP_HEADERS: 'x=1' }, { capture_content: false, max_queue_size: 1 }).then((t) => assert.equal(t, undefined));
    assert.equal(signalsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://x' }).traces, true);
    assert.equal(signalsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' }).traces, false);
    assert.equal(signalsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' }).traces, false);
  });

  test('a request that fails over: a server span with two attempt spans, GenAI attributes, statuses; the client trace continues and the upstream gets ours', async () => {
    alpha.enqueue({ status: 500, json: { error: { message: 'boom' } } });
    beta.enqueue(answer);
    const clientTrace = '0af7651916cd43dd8448eb211c80319c';
    const clientSpan = 'b7ad6b7169203331';
    const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 50, temperature: 0.3, provider: { order: ['alpha', 'beta'] } }, { traceparent: `00-${clientTrace}-${clientSpan}-01` });
    assert.equal(res.status, 200);
    const body = await res.json() as Json;
    await telemetry!.flush();

    const spans = receiver.spans().filter((s) => s.traceId === clientTrace);
    const server = spans.find((s) => s.kind === SERVER)!;
    assert.ok(server, 'a server span in the client trace');
    assert.equal(server.parentSpanId, clientSpan);
    assert.equal(server.name, 'chat test/model');
    const sa = attrs(server.attributes);
    assert.equal(sa['gen_ai.operation.name'], 'chat');
    assert.equal(sa['gen_ai.request.model'], 'test/model');
    assert.equal(sa['gen_ai.response.model'], 'test/model');
    assert.equal(sa['gen_ai.provider.name'], 'beta');
    assert.equal(sa['gen_ai.request.max_tokens'], 50);
    assert.equal(sa['gen_ai.request.temperature'], 0.3);
    assert.equal(sa['gen_ai.usage.input_tokens'], 7);
    assert.equal(sa['gen_ai.usage.output_tokens'], 3);
    assert.deepEqual(sa['gen_ai.response.finish_reasons'], ['stop']);
    assert.equal(sa['gen_ai.response.id'], body.id);
    assert.equal(sa['op.generation_id'], body.id);
    assert.equal(sa['op.cost_usd'], (7 * 1 + 3 * 2) / 1e6);
    assert.equal(sa['http.response.status_code'], 200);
    assert.equal(sa['error.type'], undefined);
    assert.notEqual(server.status?.code, STATUS_ERROR);
    assert.match(sa['gen_ai.input.messages'], /hello there/);
    assert.match(sa['gen_ai.output.messages'], /the secret answer/);

    const attempts = spans.filter((s) => s.kind === CLIENT).sort((a, b) => attrs(a.attributes)['op.attempt.index'] - attrs(b.attributes)['op.attempt.index']);
    assert.equal(attempts.length, 2);
    for (const a of attempts) assert.equal(a.parentSpanId, server.spanId);
    const [first, second] = attempts.map((a) => attrs(a.attributes));
    assert.equal(attempts[0]!.name, 'chat alpha-model');
    assert.equal(first!['gen_ai.provider.name'], 'alpha');
    assert.equal(first!['gen_ai.request.model'], 'alpha-model');
    assert.equal(first!['op.attempt.reason'], 'provider.order');
    assert.equal(first!['server.address'], '127.0.0.1');
    assert.equal(first!['error.type'], 'upstream_error');
    assert.equal(first!['http.response.status_code'], 500);
    assert.equal(attempts[0]!.status.code, STATUS_ERROR);
    assert.equal(attempts[1]!.name, 'chat beta-model');
    assert.equal(second!['gen_ai.provider.name'], 'beta');
    assert.equal(second!['error.type'], undefined);
    assert.equal(second!['http.response.status_code'], 200);
    assert.equal(second!['gen_ai.usage.output_tokens'], 3);
    assert.notEqual(attempts[1]!.status?.code, STATUS_ERROR);
    // undici's channel: the upstream answer's headers are an event on the attempt span.
    assert.equal(attempts[1]!.events?.[0]?.name, 'upstream.response_headers');

    // Each upstream call carried its own attempt span as parent.
    assert.equal(alpha.requests.at(-1)!.headers.traceparent, `00-${clientTrace}-${attempts[0]!.spanId}-01`);
    assert.equal(beta.requests.at(-1)!.headers.traceparent, `00-${clientTrace}-${attempts[1]!.spanId}-01`);

    const resource = receiver.resourceAttributes();
    assert.equal(resource['service.name'], 'gateway-under-test');
    assert.equal(resource['deployment.environment.name'], 'test');
  });

  test('a streamed request exports its server span (parent = client span) and its attempt span; no span stays open', async () => {
    beta.enqueue(streamed);
    const clientTrace = '1bf7651916cd43dd8448eb211c80319d';
    const clientSpan = 'c7ad6b7169203332';
    const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'stream please' }], stream: true, provider: { only: ['beta'] } }, { traceparent: `00-${clientTrace}-${clientSpan}-01` });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /\[DONE\]/);
    // The server span ends on the response's 'close', just after the body has arrived.
    for (let i = 0; i < 50 && telemetry!.openServerSpans() > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(telemetry!.openServerSpans(), 0);
    await telemetry!.flush();
    const spans = receiver.spans().filter((s) => s.traceId === clientTrace);
    const server = spans.find((s) => s.kind === SERVER);
    assert.ok(server, 'a server span in the client trace');
    assert.equal(server.parentSpanId, clientSpan);
    assert.equal(server.name, 'chat test/model');
    const sa = attrs(server.attributes);
    assert.equal(sa['http.response.status_code'], 200);
    assert.equal(sa['gen_ai.usage.output_tokens'], 2);
    const attempts = spans.filter((s) => s.kind === CLIENT);
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.parentSpanId, server.spanId);
    assert.equal(attrs(attempts[0]!.attributes)['gen_ai.provider.name'], 'beta');
  });

  test('retention none: no message content on any span', async () => {
    beta.enqueue(answer);
    const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'private words' }], provider: { only: ['beta'] }, op: { retention: 'none' } });
    const body = await res.json() as Json;
    await telemetry!.flush();
    const server = receiver.spans().find((s) => s.kind === SERVER && attrs(s.attributes)['op.generation_id'] === body.id)!;
    assert.ok(server);
    const sa = attrs(server.attributes);
    assert.equal(sa['gen_ai.input.messages'], undefined);
    assert.equal(sa['gen_ai.output.messages'], undefined);
    assert.equal(sa['gen_ai.usage.output_tokens'], 3);
    assert.doesNotMatch(JSON.stringify(receiver.traces), /private words|the secret answer.*private/);
  });

  test('without a client traceparent a new trace starts; a failed request has an error status and error.type', async () => {
    const res = await post({ model: 'no-such/model', messages: [{ role: 'user', content: 'x' }] });
    assert.equal(res.status, 404);
    const body = await res.json() as Json;
    await telemetry!.flush();
    const server = receiver.spans().find((s) => s.kind === SERVER && attrs(s.attributes)['op.request_id'] === body.error.request_id)!;
    assert.ok(server);
    assert.equal(server.parentSpanId ?? '', '');
    assert.equal(attrs(server.attributes)['error.type'], body.error.code);
    assert.equal(server.status.code, STATUS_ERROR);
  });

  test('a cache hit: op.cache_hit on its server span, and no provider success nor gen_ai histogram sample', async () => {
    const body = { model: 'test/model', messages: [{ role: 'user', content: 'cache me' }], provider: { only: ['alpha'] } };
    alpha.enqueue(answer);
    const miss = await post(body, { 'x-op-cache': 'true' });
    assert.equal(miss.headers.get('x-op-cache'), 'MISS');
    await miss.json();
    const metricsText = async () => (await fetch(`${gw.origin}/metrics`)).text();
    const count = (text: string, re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
    const durationRe = /gen_ai_server_request_duration_seconds_count\{[^}]*gen_ai_provider_name="alpha"[^}]*\} (\d+)/;
    const successRe = /opinference_generations_total\{[^}]*provider="alpha",status="success"[^}]*\} (\d+)/;
    let hit: Response | undefined;
    for (let i = 0; i < 100; i++) {
      const before = await metricsText();
      const res = await post(body, { 'x-op-cache': 'true' });
      if (res.headers.get('x-op-cache') === 'HIT') {
        hit = res;
        const json = await res.json() as Json;
        await gw.flush();
        const after = await metricsText();
        assert.equal(count(after, durationRe), count(before, durationRe), 'no gen_ai duration sample for the provider');
        assert.equal(count(after, successRe), count(before, successRe), 'not a provider success');
        await telemetry!.flush();
        const server = receiver.spans().find((s) => s.kind === SERVER && attrs(s.attributes)['op.generation_id'] === json.id);
        assert.ok(server);
        assert.equal(attrs(server.attributes)['op.cache_hit'], true);
        const missServer = receiver.spans().filter((s) => s.kind === SERVER && attrs(s.attributes)['op.cache_hit'] === true);
        assert.equal(missServer.length, 1);
        break;
      }
      await res.text();
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(hit, 'the second request was a hit');
  });

  test('GenAI metrics over OTLP and on /metrics', async () => {
    beta.enqueue(streamed);
    const res = await post({ model: 'test/model', messages: [{ role: 'user', content: 'stream it' }], stream: true, provider: { only: ['beta'] } });
    await res.text();
    await telemetry!.flush();
    const names = new Set(receiver.metricNames());
    for (const n of ['gen_ai.client.token.usage', 'gen_ai.server.request.duration', 'gen_ai.server.time_to_first_token', 'gen_ai.server.time_per_output_token']) assert.ok(names.has(n), `${n} exported`);
    const prom = await (await fetch(`${gw.origin}/metrics`)).text();
    assert.match(prom, /gen_ai_client_token_usage_count\{gen_ai_operation_name="chat",gen_ai_provider_name="beta",gen_ai_response_model="test\/model",gen_ai_token_type="output"\} 4/);
    assert.match(prom, /gen_ai_server_time_to_first_token_seconds_count\{gen_ai_operation_name="chat",gen_ai_provider_name="beta",gen_ai_response_model="test\/model"\} 2/);
    assert.match(prom, /gen_ai_server_time_per_output_token_seconds_count\{[^}]*\} 2/);
    assert.match(prom, /gen_ai_server_request_duration_seconds_count\{[^}]*error_type="no_endpoint_available"[^}]*\} 1/);
    assert.match(prom, /opinference_telemetry_spans_dropped 0/);
  });

  test('every metric the Grafana dashboard queries exists on /metrics', async () => {
    const prom = await (await fetch(`${gw.origin}/metrics`)).text();
    const types = new Set([...prom.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const dashboard = JSON.parse(readFileSync(new URL('../../examples/grafana-dashboard.json', import.meta.url), 'utf8')) as Json;
    const exprs = (dashboard.panels as Json[]).flatMap((p) => (p.targets as Json[]).map((t) => t.expr as string));
    assert.ok(exprs.length >= 10);
    let checked = 0;
    for (const expr of exprs) {
      // Metric names only: label matchers and `by (…)` lists name labels.
      const metricsOnly = expr.replace(/\{[^}]*\}/g, '').replace(/by \([^)]*\)/g, '');
      for (const [name] of metricsOnly.matchAll(/\b(?:opinference|gen_ai)_[a-z0-9_]+/g)) {
        const base = name.replace(/_(bucket|sum|count)$/, '');
        assert.ok(types.has(base), `${name} (in "${expr}") is not a metric of /metrics`);
        checked++;
      }
    }
    assert.ok(checked >= exprs.length);
  });
});
