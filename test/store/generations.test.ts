/** Generation records: exactly one per accepted request, lookup rights, retention. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import OpenAI from 'openai';
import { sql } from 'kysely';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const completion = (content: string, p = 12, c = 3) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } },
});

describe('generation records', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let alice: { secret: string; id: string };
  let bob: { secret: string; id: string };

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url));
    alice = await gw.createKey('alice');
    bob = await gw.createKey('bob');
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const post = (key: string, body: unknown) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const rowsFor = async (keyId: string) => {
    await gw.flush();
    return gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', keyId).orderBy('created_at').execute();
  };

  test('every accepted request leaves exactly one record: success, bad request, upstream failure', async () => {
    upstream.enqueue(completion('hello'));
    const ok = await post(alice.secret, { model: 'test/model', messages: [{ role: 'user', content: 'hi' }], op: { tags: ['t1'], session: 's-1' } });
    assert.equal(ok.status, 200);
    const okBody = (await ok.json()) as Json;
    const bad = await post(alice.secret, { model: 'test/model', messages: 'nope' });
    assert.equal(bad.status, 400);
    upstream.enqueue({ status: 503, text: 'Service Unavailable' });
    const failed = await post(alice.secret, { model: 'test/model', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(failed.status, 503);
    const rows = await rowsFor(alice.id);
    assert.deepEqual(rows.map((r) => [r.status, r.error_code, r.http_status]), [
      ['success', null, 200],
      ['error', 'invalid_request', 400],
      ['error', 'upstream_overloaded', 503],
    ]);
    const first = rows[0]!;
    assert.equal(first.id, okBody.id);
    assert.equal(first.request_id, ok.headers.get('x-request-id'));
    assert.equal(first.requested_model, 'test/model');
    assert.equal(first.served_model, 'test/model');
    assert.equal(first.provider, 'up');
    assert.equal(first.endpoint, 'up/upstream-model');
    assert.equal(first.prompt_tokens, 12);
    assert.equal(first.completion_tokens, 3);
    assert.equal(first.usage_source, 'upstream');
    assert.equal(first.finish_reason, 'stop');
    assert.equal(Number(first.cost_pico), 18_000_000); // 12 × $1/M + 3 × $2/M = $0.000018
    assert.equal(first.tags, '["t1"]');
    assert.equal(first.session, 's-1');
    assert.equal(first.content, null);
    assert.equal(first.streamed, 0);
    assert.equal(JSON.parse(rows[2]!.detail).attempts[0].status, 503);
  });

  test('GET /v1/generation: the owner and the admin see it, another key does not', async () => {
    upstream.enqueue(completion('hello', 5, 2));
    const res = await post(alice.secret, { model: 'test/model', messages: [{ role: 'user', content: 'hi' }] });
    const id = ((await res.json()) as Json).id as string;
    // Right after the response, before the batch writer ran: still found.
    const mine = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${alice.secret}` } });
    assert.equal(mine.status, 200);
    const data = ((await mine.json()) as Json).data;
    assert.equal(data.id, id);
    assert.equal(data.tokens_prompt, 5);
    assert.equal(data.tokens_completion, 2);
    assert.equal(data.total_cost, 0.000009, 'a number of USD, as OpenRouter sends it');
    assert.equal(data.total_cost_usd, '0.000009', 'the exact decimal beside it');
    assert.equal(data.api_key_id, alice.id);
    assert.equal(data.streamed, false);
    assert.equal(data.cancelled, false);
    assert.equal(data.provider_responses.length, 1);
    const theirs = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${bob.secret}` } });
    assert.equal(theirs.status, 404);
    assert.equal(((await theirs.json()) as Json).error.code, 'not_found');
    await gw.flush();
    const admin = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
    assert.equal(((await admin.json()) as Json).data.id, id);
    const missing = await fetch(`${gw.baseURL}/generation`, { headers: { authorization: `Bearer ${alice.secret}` } });
    assert.equal(missing.status, 400);
    assert.equal(((await missing.json()) as Json).error.param, 'id');
  });

  test('retention none stores no prompt or completion text; a retention in days keeps it', async () => {
    const marker = `MARKER-${Date.now()}-secret-prompt`;
    upstream.enqueue(completion(`answer ${marker}-out`));
    await post(bob.secret, { model: 'test/model', messages: [{ role: 'user', content: marker }] });
    upstream.enqueue({ sse: [JSON.stringify({ choices: [{ index: 0, delta: { content: `${marker}-streamed` }, finish_reason: 'stop' }] })] });
    await (await post(bob.secret, { model: 'test/model', stream: true, messages: [{ role: 'user', content: marker }] })).text();
    await gw.flush();
    // Every stored text column, on either engine; on SQLite the file bytes as well.
    const found = await gw.store.db
      .selectFrom('generations')
      .select('id')
      .where((eb) => eb.or(['content', 'detail', 'error_message', 'tags'].map((c) => eb(sql.ref(c), 'like', `%${marker}%`))))
      .execute();
    assert.deepEqual(found, []);
    if (gw.store.dialect === 'sqlite') {
      await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(gw.store.db);
      const files = [gw.store.location, `${gw.store.location}-wal`].filter((f) => existsSync(f));
      for (const f of files) assert.equal(readFileSync(f).includes(marker), false, `${f} contains the marker`);
    }

    const kept = `KEPT-${Date.now()}`;
    upstream.enqueue(completion(`${kept}-out`));
    const res = await post(bob.secret, { model: 'test/model', messages: [{ role: 'user', content: kept }], op: { retention: 7 } });
    const id = ((await res.json()) as Json).id as string;
    const data = ((await (await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${bob.secret}` } })).json()) as Json).data;
    assert.equal(data.retention, 7);
    assert.deepEqual(data.content.request.messages, [{ role: 'user', content: kept }]);
    assert.equal(data.content.output.content, `${kept}-out`);
  });

  test('GET /metrics counts generations, tokens and attempts in Prometheus format', async () => {
    const text = await (await fetch(`${gw.origin}/metrics`)).text();
    const line = (name: string) => text.split('\n').find((l) => l.startsWith(name));
    // Earlier tests in this file: successes from alice and bob, one 400, one upstream 503.
    assert.match(line('opinference_generations_total{model="test/model",provider="",status="error",code="upstream_overloaded"}') ?? '', / 1$/);
    assert.match(line('opinference_generations_total{model="test/model",provider="",status="error",code="invalid_request"}') ?? '', / 1$/);
    assert.match(line('opinference_upstream_attempts_total{endpoint="up/upstream-model",code="upstream_overloaded"}') ?? '', / 1$/);
    assert.match(line('opinference_tokens_total{model="test/model",provider="up",direction="prompt"}') ?? '', / \d+$/);
    assert.match(text, /# TYPE opinference_generation_duration_seconds histogram/);
    assert.equal(line('opinference_in_flight_generations'), 'opinference_in_flight_generations 0');
  });

  test('the OpenAI SDK sees the generation id in the header and the body', async () => {
    upstream.enqueue(completion('sdk'));
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: alice.secret, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    assert.equal(response.headers.get('x-op-generation-id'), data.id);
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').select(['id', 'key_id']).where('id', '=', data.id).executeTakeFirstOrThrow();
    assert.equal(row.key_id, alice.id);
  });
});
