/**
 * OpenAI Files and Batch API run by the gateway (issue 24 items 2 and 4): the `openai` SDK
 * uploads 1,000 lines, creates a batch, polls it to `completed` and reads the output and error
 * files, against a scripted upstream on port 0 that throttles (429, each throttled line waits
 * and runs again) and fails some lines (500, 400); exact counts, one record per line with its
 * batch_id and custom_id; validation errors; ownership; cancel; a gateway process SIGKILLed
 * mid-batch (and a worker killed in process) with another gateway on the same database
 * finishing it (every line exactly one result and one record). SQLite, and PostgreSQL with OP_TEST_DATABASE_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import OpenAI, { toFile } from 'openai';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { createKey } from '../../src/store/keys.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';
import { gatewayLogStream } from '../helpers/test-output.js';
import { until, sleep } from '../helpers/poll.js';
import { expected, startScriptedUpstream } from '../helpers/batch-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const BATCH_CONFIG = { concurrency: 32, per_key: 32, per_model: 32, poll_interval_ms: 50, retry_delay_ms: 10 };

const jsonl = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ custom_id: `req-${from + i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'test/model', messages: [{ role: 'user', content: `line-${from + i}` }] } })).join('\n') + '\n';

async function waitForBatch(client: OpenAI, id: string, ms = 120_000) {
  let batch = await client.batches.retrieve(id);
  await until(`batch ${id} ended`, async () => {
    batch = await client.batches.retrieve(id);
    return ['completed', 'failed', 'cancelled', 'expired'].includes(batch.status);
  }, ms, 100);
  return batch;
}

async function recordsOf(store: OpenDatabase, batchId: string) {
  return store.db.selectFrom('generations').select(['custom_id', 'status', 'http_status', 'key_id', 'api']).where('batch_id', '=', batchId).execute();
}

describe('OpenAI batches through the openai SDK', () => {
  let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
  let gw: TestGateway;
  let key: { secret: string; id: string };
  let client: OpenAI;
  before(async () => {
    upstream = await startScriptedUpstream();
    gw = await startGateway(oneModelConfig(upstream.url, { root: { batches: BATCH_CONFIG } }));
    key = await gw.createKey('batcher');
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('1,000 lines: files.create, batches.create, poll to completed, output and error files, one record per line', async () => {
    const started = performance.now();
    const file = await client.files.create({ file: await toFile(Buffer.from(jsonl(1000)), 'input.jsonl'), purpose: 'batch' });
    assert.match(file.id, /^file-/);
    assert.equal(file.purpose, 'batch');
    assert.equal(file.filename, 'input.jsonl');
    assert.equal(file.bytes, Buffer.byteLength(jsonl(1000)));
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { job: 'eval' } });
    assert.match(created.id, /^batch_/);
    assert.equal(created.status, 'validating');
    assert.deepEqual(created.request_counts, { total: 1000, completed: 0, failed: 0 });
    assert.deepEqual(created.metadata, { job: 'eval' });
    const batch = await waitForBatch(client, created.id);
    const seconds = (performance.now() - started) / 1000;
    const want = expected(1000);
    assert.equal(batch.status, 'completed');
    assert.deepEqual(batch.request_counts, { total: 1000, completed: want.completed, failed: want.failed });
    assert.ok(batch.in_progress_at && batch.finalizing_at && batch.completed_at);
    assert.equal(batch.completion_window, '24h');
    assert.equal(batch.expires_at! - batch.created_at, 86_400);
    const out = (await (await client.files.content(batch.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as Json);
    const errs = (await (await client.files.content(batch.error_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as Json);
    assert.equal(out.length, want.completed);
    assert.equal(errs.length, want.failed);
    const first = out.find((l) => l.custom_id === 'req-0')!;
    assert.match(first.id, /^batch_req_/);
    assert.equal(first.error, null);
    assert.equal(first.response.status_code, 200);
    assert.equal(first.response.body.choices[0].message.content, 'echo line-0');
    assert.equal(first.response.body.model, 'test/model');
    // The throttled line (n % 5 = 1) waited and ran again: its answer is the 200.
    assert.equal(out.find((l) => l.custom_id === 'req-1')!.response.body.choices[0].message.content, 'echo line-1');
    assert.equal(upstream.calls.get('line-1'), 2);
    const e3 = errs.find((l) => l.custom_id === 'req-3')!;
    const e7 = errs.find((l) => l.custom_id === 'req-7')!;
    assert.equal(e3.response.status_code >= 500, true);
    assert.equal(e7.response.status_code, 400);
    assert.equal(e7.response.body.error.code, 'upstream_bad_request');
    assert.equal(new Set([...out, ...errs].map((l) => l.custom_id)).size, 1000);
    // One record per line, with its batch and custom_id, under the key.
    const records = await recordsOf(gw.store, batch.id);
    assert.equal(records.length, 1000);
    assert.equal(new Set(records.map((r) => r.custom_id)).size, 1000);
    assert.equal(records.filter((r) => r.status === 'success').length, want.completed);
    assert.ok(records.every((r) => r.key_id === key.id && r.api === 'chat'));
    // Upstream calls: every line once, the 200 throttled ones twice.
    assert.equal(upstream.total, 1200);
    console.log(`# 1,000 lines (throttled and failing upstream) in ${seconds.toFixed(2)} s`);
  });

  test('a Responses batch: each line a Responses request (translated to the chat upstream), its output a Response object', async () => {
    const input = Array.from({ length: 4 }, (_, i) => JSON.stringify({ custom_id: `resp-${i}`, method: 'POST', url: '/v1/responses', body: { model: 'test/model', input: `line-${i * 10}` } })).join('\n');
    const file = await client.files.create({ file: await toFile(Buffer.from(input), 'responses.jsonl'), purpose: 'batch' });
    const created = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/responses', completion_window: '24h' });
    const batch = await waitForBatch(client, created.id, 30_000);
    assert.equal(batch.status, 'completed');
    assert.deepEqual(batch.request_counts, { total: 4, completed: 4, failed: 0 });
    assert.equal(batch.error_file_id, null);
    const out = (await (await client.files.content(batch.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as Json);
    const first = out.find((l) => l.custom_id === 'resp-0')!;
    assert.equal(first.response.body.object, 'response');
    assert.equal(first.response.body.status, 'completed');
    assert.equal(first.response.body.output[0].content[0].text, 'echo line-0');
    const records = await recordsOf(gw.store, batch.id);
    assert.deepEqual(records.map((r) => r.api), ['responses', 'responses', 'responses', 'responses']);
  });

  test('an embeddings batch (an embeddings model) and a batch of the admin key (records without a key id)', async () => {
    const g = await startGateway({
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-upstream-secret' }],
      models: [{ id: 'test/embed', name: 'Embed', context_length: 8192, architecture: { input_modalities: ['text'], output_modalities: ['embeddings'] }, endpoints: [{ provider: 'up', upstream_model: 'upstream-embed', embeddings: true, pricing: { prompt: 0.02 } }] }],
      batches: BATCH_CONFIG,
    });
    try {
      const admin = new OpenAI({ baseURL: g.baseURL, apiKey: g.adminKey, maxRetries: 0 });
      const input = ['ab', 'abcd', 'abcdef'].map((t, i) => JSON.stringify({ custom_id: `e${i}`, method: 'POST', url: '/v1/embeddings', body: { model: 'test/embed', input: t } })).join('\n');
      const file = await admin.files.create({ file: await toFile(Buffer.from(input), 'emb.jsonl'), purpose: 'batch' });
      const created = await admin.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
      const batch = await waitForBatch(admin, created.id, 30_000);
      assert.deepEqual([batch.status, batch.request_counts], ['completed', { total: 3, completed: 3, failed: 0 }]);
      const out = (await (await admin.files.content(batch.output_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as Json);
      assert.deepEqual(out.map((l) => [l.custom_id, l.response.body.object, l.response.body.data[0].embedding]), [['e0', 'list', [2, 0.5]], ['e1', 'list', [4, 0.5]], ['e2', 'list', [6, 0.5]]]);
      const records = await recordsOf(g.store, batch.id);
      assert.deepEqual(records.map((r) => [r.api, r.key_id, r.status]), [['embeddings', null, 'success'], ['embeddings', null, 'success'], ['embeddings', null, 'success']]);
    } finally {
      await g.close();
    }
  });

  test('the key\'s rate limit: a refused line waits for its Retry-After and is queued again, its refusal not recorded', async () => {
    // Limits count per clock minute: start with at least 8 s of this minute left, so the waiting lines cannot run before the test looks.
    if (60_000 - (Date.now() % 60_000) < 8_000) await sleep(60_000 - (Date.now() % 60_000) + 100);
    const windowEnd = (Math.floor(Date.now() / 60_000) + 1) * 60_000;
    const { secret } = await createKey(gw.store.db, 'one-per-minute', null, { rate_limit: { requests_per_minute: 1, tokens_per_minute: null } });
    const c = new OpenAI({ baseURL: gw.baseURL, apiKey: secret, maxRetries: 0 });
    // Lines 5004 and 5005: lines the scripted upstream answers at once (no 429 of its own).
    const file = await c.files.create({ file: await toFile(Buffer.from(jsonl(2, 5004)), 'rl.jsonl'), purpose: 'batch' });
    const b = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const lines = () => gw.store.db.selectFrom('batch_lines').select(['line_no', 'state', 'tries', 'not_before']).where('batch_id', '=', b.id).orderBy('line_no').execute();
    await until('one line ran, one waits', async () => {
      const l = await lines();
      return l.filter((x) => x.state === 'done').length === 1 && l.filter((x) => x.state === 'queued' && x.tries >= 1).length === 1;
    }, 20_000);
    const waiting = (await lines()).filter((x) => x.state === 'queued');
    // They wait for the next minute window (Retry-After), not for the worker's own retry delay.
    assert.ok(waiting.every((x) => Number(x.not_before) >= windowEnd - 1_000), `not before the next window: ${waiting.map((x) => Number(x.not_before) - windowEnd).join(', ')} ms`);
    assert.equal((await c.batches.retrieve(b.id)).request_counts!.failed, 0);
    const records = await recordsOf(gw.store, b.id);
    assert.deepEqual(records.map((r) => r.status), ['success']);
    await c.batches.cancel(b.id);
    const ended = await waitForBatch(c, b.id, 20_000);
    assert.deepEqual([ended.status, ended.request_counts], ['cancelled', { total: 2, completed: 1, failed: 1 }]);
  });

  test('the Files API: get, list, content, delete; another key sees none of them', async () => {
    const file = await client.files.create({ file: await toFile(Buffer.from(jsonl(2)), 'two.jsonl'), purpose: 'batch' });
    assert.equal((await client.files.retrieve(file.id)).id, file.id);
    assert.equal(await (await client.files.content(file.id)).text(), jsonl(2));
    const list = await client.files.list();
    assert.ok(list.data.some((f) => f.id === file.id));
    const other = await gw.createKey('other');
    const otherClient = new OpenAI({ baseURL: gw.baseURL, apiKey: other.secret, maxRetries: 0 });
    await assert.rejects(otherClient.files.retrieve(file.id), (e: Json) => e.status === 404 && e.error?.code === 'not_found');
    await assert.rejects(otherClient.files.content(file.id), (e: Json) => e.status === 404);
    assert.equal((await otherClient.files.list()).data.length, 0);
    await assert.rejects(otherClient.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }), (e: Json) => e.status === 404 && e.error?.param === 'input_file_id');
    // The admin key sees every file.
    const admin = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    assert.equal((await admin.files.retrieve(file.id)).id, file.id);
    const deleted = await client.files.delete(file.id);
    assert.deepEqual({ id: deleted.id, deleted: deleted.deleted }, { id: file.id, deleted: true });
    await assert.rejects(client.files.retrieve(file.id), (e: Json) => e.status === 404);
  });

  test('bad uploads and batch bodies are 400s naming the field; a bad input file fails the batch with line errors', async () => {
    await assert.rejects(client.files.create({ file: await toFile(Buffer.from(jsonl(1)), 'x.jsonl'), purpose: 'fine-tune' }), (e: Json) => e.status === 400 && e.error?.param === 'purpose');
    await assert.rejects(client.files.create({ file: await toFile(Buffer.from('hi'), 'x.txt'), purpose: 'batch' }), (e: Json) => e.status === 400 && e.error?.param === 'file');
    const good = await client.files.create({ file: await toFile(Buffer.from(jsonl(1)), 'x.jsonl'), purpose: 'batch' });
    await assert.rejects(client.batches.create({ input_file_id: good.id, endpoint: '/v1/moderations' as '/v1/chat/completions', completion_window: '24h' }), (e: Json) => e.status === 400 && e.error?.param === 'endpoint');
    await assert.rejects(client.batches.create({ input_file_id: good.id, endpoint: '/v1/chat/completions', completion_window: '1h' as '24h' }), (e: Json) => e.status === 400 && e.error?.param === 'completion_window');
    const lines = [
      JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'test/model', messages: [] } }),
      JSON.stringify({ custom_id: 'a', method: 'POST', url: '/v1/chat/completions', body: { model: 'test/model', messages: [] } }),
      JSON.stringify({ custom_id: 'b', method: 'GET', url: '/v1/embeddings', body: { model: 'test/model' } }),
      '{not json',
    ].join('\n');
    const bad = await client.files.create({ file: await toFile(Buffer.from(lines), 'bad.jsonl'), purpose: 'batch' });
    const failed = await client.batches.create({ input_file_id: bad.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    assert.equal(failed.status, 'failed');
    assert.ok(failed.failed_at);
    assert.deepEqual(failed.errors!.data!.map((e) => [e.code, e.line, e.param]), [
      ['duplicate_custom_id', 2, 'custom_id'],
      ['invalid_method', 3, 'method'],
      ['mismatched_url', 3, 'url'],
      ['invalid_json_line', 4, null],
    ]);
  });

  test('cancel: no new lines start; the batch ends cancelled with the unrun lines as batch_cancelled; list pages with after', async () => {
    const slow = await startScriptedUpstream(50);
    const g = await startGateway(oneModelConfig(slow.url, { root: { batches: { ...BATCH_CONFIG, concurrency: 2 } } }));
    try {
      const k = await g.createKey('c');
      const c = new OpenAI({ baseURL: g.baseURL, apiKey: k.secret, maxRetries: 0 });
      const file = await c.files.create({ file: await toFile(Buffer.from(jsonl(200)), 'c.jsonl'), purpose: 'batch' });
      const b = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      await until('some lines ran', async () => (await c.batches.retrieve(b.id)).request_counts!.completed >= 2, 20_000);
      const cancelling = await c.batches.cancel(b.id);
      assert.equal(cancelling.status, 'cancelling');
      assert.ok(cancelling.cancelling_at);
      const ended = await waitForBatch(c, b.id, 20_000);
      assert.equal(ended.status, 'cancelled');
      const counts = ended.request_counts!;
      assert.equal(counts.total, 200);
      assert.ok(counts.completed < 200);
      const errs = (await (await c.files.content(ended.error_file_id!)).text()).trim().split('\n').map((l) => JSON.parse(l) as Json);
      const cancelled = errs.filter((l) => l.error?.code === 'batch_cancelled');
      assert.ok(cancelled.length > 100);
      assert.equal(cancelled[0]!.response, null);
      const records = await recordsOf(g.store, b.id);
      // Every line that ran has one record, and no cancelled line has any.
      assert.equal(records.length, 200 - cancelled.length);
      // No line started after the cancel beyond those in flight (2) or finished and not yet written (2): claimed ones were given back.
      const atCancel = cancelling.request_counts!.completed + cancelling.request_counts!.failed;
      assert.ok(records.length <= atCancel + 4, `${records.length} lines ran, ${atCancel} had when cancelled`);
      await assert.rejects(c.batches.cancel(b.id).then(() => c.batches.cancel('batch_nope')), (e: Json) => e.status === 404);
      const b2 = await c.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      await c.batches.cancel(b2.id);
      const page1 = await c.batches.list({ limit: 1 });
      assert.equal(page1.data[0]!.id, b2.id);
      assert.equal(page1.has_more, true);
      const page2 = await c.batches.list({ limit: 1, after: b2.id });
      assert.equal(page2.data[0]!.id, b.id);
    } finally {
      await g.close();
      await slow.close();
    }
  });
});

describe('a batch worker killed mid-batch', () => {
  let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
  let database: TestDatabase;
  const stores: OpenDatabase[] = [];
  const gateways: Gateway[] = [];
  const start = async () => {
    const store = database.open();
    stores.push(store);
    await migrate(store.db);
    const config = oneModelConfig(upstream.url, { root: { batches: { ...BATCH_CONFIG, concurrency: 8, lease_ms: 1000 }, routing: { circuit_breaker: { failure_threshold: 100000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 }, server: { overload: { max_event_loop_delay_ms: 0 } } } });
    const gateway = buildGateway({ loaded: { config: parseConfig(config, 'test config'), source: 'test' }, db: store.db, adminKey: 'admin-test-key', logger: { level: 'warn', stream: gatewayLogStream() }, purgeIntervalMs: 0 });
    await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    gateways.push(gateway);
    return { gateway, store, baseURL: `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}/v1` };
  };
  before(async () => {
    upstream = await startScriptedUpstream(5);
    database = await createTestDatabase();
  });
  after(async () => {
    for (const g of gateways) await g.close().catch(() => {});
    for (const s of stores) await s.close();
    await database.drop();
    await upstream.close();
  });

  test('SIGKILL of a gateway process mid-batch: a gateway started on the same database finishes it, every line exactly one result and one record', async () => {
    const config = oneModelConfig(upstream.url, { root: { batches: { ...BATCH_CONFIG, concurrency: 8, lease_ms: 1000 }, routing: { circuit_breaker: { failure_threshold: 100000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 }, server: { overload: { max_event_loop_delay_ms: 0 } } } });
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../helpers/gateway-process.ts', import.meta.url))], { env: { ...process.env, OP_DATABASE_URL: database.url, OP_TEST_CONFIG: JSON.stringify(config) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', () => {});
    const exited = new Promise((r) => child.once('exit', r));
    try {
      await until('the gateway process listens', () => /PORT \d+/.test(out), 60_000, 50);
      const baseURL = `http://127.0.0.1:${/PORT (\d+)/.exec(out)![1]}/v1`;
      const store = database.open();
      stores.push(store);
      const { secret } = await createKey(store.db, 'killed');
      const ck = new OpenAI({ baseURL, apiKey: secret, maxRetries: 0 });
      const file = await ck.files.create({ file: await toFile(Buffer.from(jsonl(300, 1000)), 'k.jsonl'), purpose: 'batch' });
      const b = await ck.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
      await until('some lines done', async () => (await ck.batches.retrieve(b.id)).request_counts!.completed >= 60, 60_000, 20);
      child.kill('SIGKILL');
      await exited;
      const done = (await store.db.selectFrom('batch_lines').select('line_no').where('batch_id', '=', b.id).where('state', '=', 'done').execute()).length;
      assert.ok(done > 0 && done < 300, `killed mid-batch (${done} lines done)`);
      const next = await start();
      const cn = new OpenAI({ baseURL: next.baseURL, apiKey: secret, maxRetries: 0 });
      const ended = await waitForBatch(cn, b.id, 60_000);
      const want = expected(300);
      assert.equal(ended.status, 'completed');
      assert.deepEqual(ended.request_counts, { total: 300, completed: want.completed, failed: want.failed });
      const lines = [...(await (await cn.files.content(ended.output_file_id!)).text()).trim().split('\n'), ...(await (await cn.files.content(ended.error_file_id!)).text()).trim().split('\n')];
      assert.equal(new Set(lines.map((l) => (JSON.parse(l) as Json).custom_id as string)).size, 300);
      assert.equal(lines.length, 300);
      const records = await recordsOf(next.store, b.id);
      assert.equal(records.length, 300);
      assert.equal(new Set(records.map((r) => r.custom_id)).size, 300);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  test('another process on the same database takes over its leases: every line exactly one result and one record', async () => {
    const a = await start();
    const { secret } = await createKey(a.store.db, 'k');
    const ca = new OpenAI({ baseURL: a.baseURL, apiKey: secret, maxRetries: 0 });
    const file = await ca.files.create({ file: await toFile(Buffer.from(jsonl(300)), 'r.jsonl'), purpose: 'batch' });
    const b = await ca.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    await until('a third of the lines done', async () => (await ca.batches.retrieve(b.id)).request_counts!.completed >= 100, 60_000);
    // Killed: what is in flight is never written, its leases stay held.
    a.gateway.batches.crashed = true;
    await a.gateway.close();
    const held = await a.store.db.selectFrom('batch_lines').select('line_no').where('batch_id', '=', b.id).where('state', '=', 'running').execute();
    assert.ok(held.length > 0, 'the killed worker held leases');
    await sleep(50);
    const bGw = await start();
    const cb = new OpenAI({ baseURL: bGw.baseURL, apiKey: secret, maxRetries: 0 });
    const ended = await waitForBatch(cb, b.id, 60_000);
    const want = expected(300);
    assert.equal(ended.status, 'completed');
    assert.deepEqual(ended.request_counts, { total: 300, completed: want.completed, failed: want.failed });
    const out = (await (await cb.files.content(ended.output_file_id!)).text()).trim().split('\n');
    const errs = (await (await cb.files.content(ended.error_file_id!)).text()).trim().split('\n');
    const ids = [...out, ...errs].map((l) => (JSON.parse(l) as Json).custom_id as string);
    assert.equal(ids.length, 300);
    assert.equal(new Set(ids).size, 300);
    const records = await recordsOf(bGw.store, b.id);
    assert.equal(records.length, 300);
    assert.equal(new Set(records.map((r) => r.custom_id)).size, 300);
  });
});
