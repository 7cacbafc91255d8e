import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, until } from '../helpers/poll.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, unknown>;

/** One OpenAI chunk of the fake upstream's stream. */
const chunk = (content: string, finish: string | null = null): string =>
  JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta: finish ? {} : { content }, finish_reason: finish }] });

/** A slow stream: 6 pieces 150 ms apart (about 0.9 s), text `a b c d e `. */
const SLOW_STREAM = { sse: ['a ', 'b ', 'c ', 'd ', 'e '].map((t) => chunk(t)).concat(chunk('', 'stop')), delayMs: 150 };
const COMPLETION = { json: { id: 'chatcmpl-up', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } } };

interface Setup {
  up: Upstream;
  gw: TestGateway;
  chat(body?: Json): Promise<Response>;
  messages(body?: Json): Promise<Response>;
  get(path: string): Promise<Response>;
}

async function setup(t: TestContext, overload: Json): Promise<Setup> {
  const up = await startUpstream();
  const gw = await startGateway(oneModelConfig(up.url, { root: { server: { overload } } }));
  t.after(async () => {
    await gw.close();
    await up.close();
  });
  const post = (path: string, body: Json) =>
    fetch(`${gw.origin}${path}`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return {
    up,
    gw,
    chat: (body = {}) => post('/v1/chat/completions', { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], ...body }),
    messages: (body = {}) => post('/v1/messages', { model: 'test/model', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], ...body }),
    get: (path) => fetch(`${gw.origin}${path}`),
  };
}

/** The text of an OpenAI chat stream, and whether it ended with `[DONE]`. */
async function chatStreamText(res: Response): Promise<{ text: string; done: boolean }> {
  const raw = await res.text();
  let text = '';
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const ev = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] };
    text += ev.choices?.[0]?.delta?.content ?? '';
  }
  return { text, done: raw.trimEnd().endsWith('data: [DONE]') };
}

/** The value of a Prometheus sample, e.g. `opinference_overload_refusals_total{reason="in_flight"}`, or undefined. */
async function metric(s: Setup, series: string): Promise<number | undefined> {
  const text = await (await s.get('/metrics')).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** An OpenAI-envelope refusal: 503 gateway_overloaded, retryable, with retry-after; returns the error. */
async function openAIRefusal(res: Response, retryAfter: string): Promise<Json> {
  assert.equal(res.status, 503);
  assert.equal(res.headers.get('retry-after'), retryAfter);
  assert.equal(res.headers.get('x-should-retry'), null);
  const body = (await res.json()) as { error: Json };
  assert.equal(body.error.code, 'gateway_overloaded');
  assert.equal(body.error.kind, 'retryable');
  assert.equal(body.error.type, 'server_error');
  assert.equal(body.error.scope, 'gateway');
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  return body.error;
}

test('max_in_flight_requests: 2 held streams → the third request is refused (OpenAI and Anthropic envelopes); the held ones finish intact; then served again', async (t) => {
  const s = await setup(t, { max_in_flight_requests: 2, retry_after_s: 3 });
  s.up.enqueue(SLOW_STREAM, SLOW_STREAM);
  const [a, b] = await Promise.all([s.chat({ stream: true }), s.chat({ stream: true })]);
  assert.equal(a.status, 200);
  assert.equal(b.status, 200);
  assert.equal(await metric(s, 'opinference_overload_in_flight_requests'), 2);
  assert.equal(await metric(s, 'opinference_overload_streams'), 2);

  const refused = await openAIRefusal(await s.chat({ stream: true }), '3');
  assert.equal(refused.message, 'the gateway is overloaded: 2 generation requests are being served, over server.overload.max_in_flight_requests 2; retry in 3 s, or on another replica');
  assert.deepEqual(refused.metadata, { overload: 'in_flight' });
  // Non-streamed requests are counted too.
  assert.equal((await openAIRefusal(await s.chat(), '3')).code, 'gateway_overloaded');

  const msg = await s.messages({ stream: true });
  assert.equal(msg.status, 503);
  assert.equal(msg.headers.get('retry-after'), '3');
  const anthropic = (await msg.json()) as { type: string; error: Json; request_id: string };
  assert.equal(anthropic.type, 'error');
  assert.equal(anthropic.error.type, 'overloaded_error');
  assert.equal(anthropic.error.code, 'gateway_overloaded');
  assert.equal(anthropic.request_id, msg.headers.get('x-request-id'));

  // Liveness and readiness are answered, never refused; /ready says overloaded.
  const health = await s.get('/health');
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { status: 'ok' });
  const ready = await s.get('/ready');
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: 'not ready', reason: 'overloaded', overload: { reason: 'in_flight', value: 2, limit: 2 }, message: '2 generation requests are being served, over server.overload.max_in_flight_requests 2' });
  // Not generation work: count_tokens and the model list are answered.
  const counted = await fetch(`${s.gw.origin}/v1/messages/count_tokens`, { method: 'POST', headers: { authorization: `Bearer ${s.gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] }) });
  assert.equal(counted.status, 200);
  assert.equal(typeof ((await counted.json()) as { input_tokens: unknown }).input_tokens, 'number');
  const models = await fetch(`${s.gw.baseURL}/models`, { headers: { authorization: `Bearer ${s.gw.adminKey}` } });
  assert.equal(models.status, 200);
  // Refused before the upstream: it saw the two held streams only.
  assert.equal(s.up.requests.length, 2);

  // The held streams finish intact.
  for (const res of [a, b]) assert.deepEqual(await chatStreamText(res), { text: 'a b c d e ', done: true });
  await until('the held streams are released', async () => (await metric(s, 'opinference_overload_in_flight_requests')) === 0, 2000);
  assert.equal(await metric(s, 'opinference_overload_streams'), 0);

  const ready2 = await s.get('/ready');
  assert.equal(ready2.status, 200);
  s.up.enqueue(COMPLETION);
  const again = await s.chat();
  assert.equal(again.status, 200);
  assert.equal(((await again.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'done');

  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="in_flight"}'), 3);
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="streams"}'), undefined);
  // No generation record for a refusal: the two streams and the last request only.
  await s.gw.flush();
  const rows = await s.gw.store.db.selectFrom('generations').select(['id']).execute();
  assert.equal(rows.length, 3);
});

test('max_streams: 2 held streams → a third stream is refused with reason streams, a non-streamed request is still served', async (t) => {
  const s = await setup(t, { max_streams: 2 });
  s.up.enqueue(SLOW_STREAM, SLOW_STREAM);
  const [a, b] = await Promise.all([s.chat({ stream: true }), s.chat({ stream: true })]);
  assert.equal(a.status, 200);
  assert.equal(b.status, 200);

  const refused = await openAIRefusal(await s.chat({ stream: true }), '2');
  assert.equal(refused.message, 'the gateway is overloaded: 2 streams are held, over server.overload.max_streams 2; retry in 2 s, or on another replica');
  assert.deepEqual(refused.metadata, { overload: 'streams' });
  const msg = await s.messages({ stream: true });
  assert.equal(msg.status, 503);
  assert.equal(((await msg.json()) as { error: Json }).error.code, 'gateway_overloaded');

  s.up.enqueue(COMPLETION);
  const plain = await s.chat();
  assert.equal(plain.status, 200);
  assert.equal(((await plain.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content, 'done');

  const ready = await s.get('/ready');
  assert.equal(ready.status, 503);
  assert.deepEqual(((await ready.json()) as Json).overload, { reason: 'streams', value: 2, limit: 2 });

  for (const res of [a, b]) assert.deepEqual(await chatStreamText(res), { text: 'a b c d e ', done: true });
  await until('the held streams are released', async () => (await metric(s, 'opinference_overload_streams')) === 0, 2000);
  s.up.enqueue(SLOW_STREAM);
  const again = await s.chat({ stream: true });
  assert.equal(again.status, 200);
  assert.deepEqual(await chatStreamText(again), { text: 'a b c d e ', done: true });
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="streams"}'), 2);
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="in_flight"}'), undefined);
});

test('a client that goes away mid-stream releases its slot', async (t) => {
  const s = await setup(t, { max_streams: 1 });
  s.up.enqueue(SLOW_STREAM);
  const ac = new AbortController();
  const held = await fetch(`${s.gw.origin}/v1/chat/completions`, { method: 'POST', signal: ac.signal, headers: { authorization: `Bearer ${s.gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], stream: true }) });
  assert.equal(held.status, 200);
  assert.equal(await metric(s, 'opinference_overload_streams'), 1);
  ac.abort();
  await until('the aborted stream is released', async () => (await metric(s, 'opinference_overload_streams')) === 0, 3000);
  assert.equal(await metric(s, 'opinference_overload_in_flight_requests'), 0);
  s.up.enqueue(SLOW_STREAM);
  const next = await s.chat({ stream: true });
  assert.equal(next.status, 200);
  assert.deepEqual(await chatStreamText(next), { text: 'a b c d e ', done: true });
});

/** Keep the event loop saturated: an 80 ms busy-wait every 90 ms, until the returned function is called. */
function saturateLoop(): () => void {
  const timer = setInterval(() => {
    const end = performance.now() + 80;
    while (performance.now() < end) {
      // busy-wait: the loop is blocked, as under a CPU-bound load
    }
  }, 50);
  return () => clearInterval(timer);
}

test('event-loop delay: a saturated loop refuses new requests (event_loop_delay), /health 200, /ready 503 overloaded; once it recovers, served again', async (t) => {
  const s = await setup(t, { max_event_loop_delay_ms: 20, sample_interval_ms: 200 });
  s.up.setDefault(COMPLETION);
  const first = await s.chat();
  assert.equal(first.status, 200);

  const stop = saturateLoop();
  t.after(stop);
  const app = s.gw.gateway.app;
  await until('the sampled delay passes 20 ms', () => app.memoryUsage().eventLoopDelay > 20, 5000);

  const refused = await openAIRefusal(await s.chat(), '2');
  assert.deepEqual(refused.metadata, { overload: 'event_loop_delay' });
  assert.match(refused.message as string, /^the gateway is overloaded: (the mean event-loop delay is \d+ ms|the event loop was blocked for the whole sample interval), over server\.overload\.max_event_loop_delay_ms 20; retry in 2 s, or on another replica$/);
  const health = await s.get('/health');
  assert.equal(health.status, 200);
  const ready = await s.get('/ready');
  assert.equal(ready.status, 503);
  const readyBody = (await ready.json()) as { reason: string; overload: { reason: string; limit: number } };
  assert.equal(readyBody.reason, 'overloaded');
  assert.equal(readyBody.overload.reason, 'event_loop_delay');
  assert.equal(readyBody.overload.limit, 20);
  assert.ok((await metric(s, 'opinference_overload_event_loop_delay_seconds'))! > 0.02);

  stop();
  await until('/ready recovers', async () => (await s.get('/ready')).status === 200, 5000, 50);
  const served = await s.chat();
  assert.equal(served.status, 200);
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="event_loop_delay"}'), 1);
  assert.equal(s.up.requests.length, 2);
});

test('event-loop utilization: a busy loop refuses with reason event_loop_utilization; served again once idle', async (t) => {
  const s = await setup(t, { max_event_loop_delay_ms: 0, max_event_loop_utilization: 0.5, sample_interval_ms: 200 });
  s.up.setDefault(COMPLETION);
  const stop = saturateLoop();
  t.after(stop);
  await until('the sampled utilization passes 0.5', () => s.gw.gateway.app.memoryUsage().eventLoopUtilized > 0.5, 5000);
  const refused = await openAIRefusal(await s.chat(), '2');
  assert.deepEqual(refused.metadata, { overload: 'event_loop_utilization' });
  assert.match(refused.message as string, /^the gateway is overloaded: the event-loop utilization is 0\.\d{3}, over server\.overload\.max_event_loop_utilization 0\.5; /);
  assert.equal((await s.get('/health')).status, 200);
  stop();
  await until('/ready recovers', async () => (await s.get('/ready')).status === 200, 5000, 50);
  assert.equal((await s.chat()).status, 200);
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="event_loop_utilization"}'), 1);
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="event_loop_delay"}'), undefined);
});

test('event-loop delay: a stream admitted before the loop saturates is never cut', async (t) => {
  const s = await setup(t, { max_event_loop_delay_ms: 20, sample_interval_ms: 200 });
  s.up.enqueue(SLOW_STREAM);
  const held = await s.chat({ stream: true });
  assert.equal(held.status, 200);
  const stop = saturateLoop();
  t.after(stop);
  await until('the sampled delay passes 20 ms', () => s.gw.gateway.app.memoryUsage().eventLoopDelay > 20, 5000);
  assert.equal((await s.chat({ stream: true })).status, 503);
  assert.deepEqual(await chatStreamText(held), { text: 'a b c d e ', done: true });
  stop();
});

test('a reload changes the thresholds: a limit set by SIGHUP applies to the next request, lifting it admits again', async (t) => {
  const s = await setup(t, {});
  s.up.enqueue(SLOW_STREAM);
  const held = await s.chat({ stream: true });
  assert.equal(held.status, 200);
  const reload = (overload: Json) => s.gw.gateway.reload({ config: parseConfig(oneModelConfig(s.up.url, { root: { server: { overload }, routing: { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 } } }), 'reload'), source: 'reload' });
  reload({ max_streams: 1, retry_after_s: 5 });
  await openAIRefusal(await s.chat({ stream: true }), '5');
  reload({});
  s.up.enqueue(SLOW_STREAM);
  const admitted = await s.chat({ stream: true });
  assert.equal(admitted.status, 200);
  for (const res of [held, admitted]) assert.deepEqual(await chatStreamText(res), { text: 'a b c d e ', done: true });
});

test('defaults: nothing is refused unless configured; listen_backlog 4096', () => {
  const config = parseConfig({}, 'test');
  assert.deepEqual(config.server.overload, { max_event_loop_delay_ms: 1000, max_event_loop_utilization: 0, max_in_flight_requests: 0, max_streams: 0, retry_after_s: 2, sample_interval_ms: 1000 });
  assert.equal(config.server.listen_backlog, 4096);
});

test('config: bad overload values are refused with path-named errors', () => {
  const issues = (server: Json): readonly string[] => {
    try {
      parseConfig({ server }, 'x.yaml');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.issues;
    }
    return assert.fail('expected a ConfigError');
  };
  assert.deepEqual(issues({ overload: { max_in_flight_requests: -1, max_event_loop_utilization: 1.5, retry_after_s: 0, sample_interval_ms: 5, max_streams: 'many' } }), [
    'server.overload.max_event_loop_utilization: Number must be less than or equal to 1',
    'server.overload.max_in_flight_requests: Number must be greater than or equal to 0',
    'server.overload.max_streams: Expected number, received string',
    'server.overload.retry_after_s: Number must be greater than or equal to 1',
    'server.overload.sample_interval_ms: Number must be greater than or equal to 50',
  ]);
  assert.deepEqual(issues({ overload: { max_queue: 1 } }), ['server.overload.max_queue: unknown key']);
  assert.deepEqual(issues({ listen_backlog: 0 }), ['server.listen_backlog: Number must be greater than or equal to 1']);
});

test('a refusal does not wait for the loop: 20 refusals in a row each answer quickly', async (t) => {
  const s = await setup(t, { max_in_flight_requests: 1 });
  s.up.enqueue(SLOW_STREAM);
  const held = await s.chat({ stream: true });
  assert.equal(held.status, 200);
  for (let i = 0; i < 20; i++) {
    const started = performance.now();
    const res = await s.chat({ stream: true });
    assert.equal(res.status, 503);
    await res.body?.cancel();
    assert.ok(performance.now() - started < 500, `refusal ${i} took ${Math.round(performance.now() - started)} ms`);
  }
  assert.equal(await metric(s, 'opinference_overload_refusals_total{reason="in_flight"}'), 20);
  assert.deepEqual(await chatStreamText(held), { text: 'a b c d e ', done: true });
  await sleep(0);
});
