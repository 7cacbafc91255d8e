/**
 * Anthropic Message Batches run by the gateway (issue 24 items 3 and 4): `@anthropic-ai/sdk`
 * `messages.batches.create` with 1,000 requests, `retrieve` until ended, `results()` (fetched
 * from the gateway's own `results_url`), against the scripted upstream that throttles and fails
 * some lines; exact counts, one record per line; validation in Anthropic's envelope; list,
 * cancel; expiry; retention `none`: inputs and results deleted once read. SQLite, and PostgreSQL with
 * OP_TEST_DATABASE_URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { sleep, until } from '../helpers/poll.js';
import { expected, startScriptedUpstream } from '../helpers/batch-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const requests = (count: number) => Array.from({ length: count }, (_, i) => ({ custom_id: `r-${i}`, params: { model: 'test/model', max_tokens: 32, messages: [{ role: 'user' as const, content: `line-${i}` }] } }));

async function waitEnded(client: Anthropic, id: string, ms = 120_000) {
  let b = await client.messages.batches.retrieve(id);
  await until(`message batch ${id} ended`, async () => {
    b = await client.messages.batches.retrieve(id);
    return b.processing_status === 'ended';
  }, ms, 100);
  return b;
}

async function results(client: Anthropic, id: string): Promise<Json[]> {
  const out: Json[] = [];
  for await (const r of await client.messages.batches.results(id)) out.push(r as Json);
  return out;
}

describe('Anthropic Message Batches through @anthropic-ai/sdk', () => {
  let upstream: Awaited<ReturnType<typeof startScriptedUpstream>>;
  let gw: TestGateway;
  let client: Anthropic;
  let keyId: string;
  before(async () => {
    upstream = await startScriptedUpstream();
    gw = await startGateway(oneModelConfig(upstream.url, { root: { batches: { concurrency: 32, per_key: 32, per_model: 32, poll_interval_ms: 50, retry_delay_ms: 10 } } }));
    const key = await gw.createKey('anthropic-batcher');
    keyId = key.id;
    client = new Anthropic({ baseURL: gw.origin, apiKey: key.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('1,000 requests: create, retrieve until ended, results(); exact counts and one record per line', async () => {
    const created = await client.messages.batches.create({ requests: requests(1000) });
    assert.match(created.id, /^msgbatch_/);
    assert.equal(created.type, 'message_batch');
    assert.equal(created.processing_status, 'in_progress');
    assert.deepEqual(created.request_counts, { processing: 1000, succeeded: 0, errored: 0, canceled: 0, expired: 0 });
    assert.equal(created.results_url, null);
    assert.equal(Date.parse(created.expires_at) - Date.parse(created.created_at), 86_400_000);
    const ended = await waitEnded(client, created.id);
    const want = expected(1000);
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: want.completed, errored: want.failed, canceled: 0, expired: 0 });
    assert.equal(ended.results_url, `${gw.origin}/v1/messages/batches/${created.id}/results`);
    assert.ok(ended.ended_at);
    const lines = await results(client, created.id);
    assert.equal(lines.length, 1000);
    assert.equal(new Set(lines.map((l) => l.custom_id)).size, 1000);
    const byId = new Map(lines.map((l) => [l.custom_id as string, l.result as Json]));
    const ok = byId.get('r-0')!;
    assert.equal(ok.type, 'succeeded');
    assert.equal(ok.message.type, 'message');
    assert.equal(ok.message.role, 'assistant');
    assert.deepEqual(ok.message.content, [{ type: 'text', text: 'echo line-0' }]);
    assert.equal(byId.get('r-1')!.type, 'succeeded'); // throttled once, then answered
    const bad = byId.get('r-7')!;
    assert.equal(bad.type, 'errored');
    assert.equal(bad.error.type, 'error');
    assert.equal(bad.error.error.type, 'invalid_request_error');
    assert.equal(byId.get('r-3')!.type, 'errored');
    assert.equal(lines.filter((l) => l.result.type === 'succeeded').length, want.completed);
    const records = await gw.store.db.selectFrom('generations').select(['custom_id', 'status', 'api', 'key_id']).where('batch_id', '=', created.id).execute();
    assert.equal(records.length, 1000);
    assert.equal(new Set(records.map((r) => r.custom_id)).size, 1000);
    assert.equal(records.filter((r) => r.status === 'success').length, want.completed);
    assert.ok(records.every((r) => r.api === 'messages' && r.key_id === keyId));
  });

  test('a bad request refuses the whole batch in Anthropic\'s envelope; list and cancel; another key sees nothing', async () => {
    await assert.rejects(
      client.messages.batches.create({ requests: [{ custom_id: 'has space', params: { model: 'test/model', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] } }] }),
      (e: Json) => e.status === 400 && e.error?.type === 'error' && e.error?.error?.type === 'invalid_request_error' && /requests\.0\.custom_id/.test(e.error.error.message),
    );
    await assert.rejects(
      client.messages.batches.create({ requests: [...requests(1), ...requests(1)] }),
      (e: Json) => e.status === 400 && /requests\.1\.custom_id/.test(e.error.error.message),
    );
    await assert.rejects(client.messages.batches.create({ requests: [] }), (e: Json) => e.status === 400);
    const b = await client.messages.batches.create({ requests: requests(3) });
    const canceled = await client.messages.batches.cancel(b.id);
    assert.ok(['canceling', 'ended'].includes(canceled.processing_status));
    assert.ok(canceled.cancel_initiated_at);
    const ended = await waitEnded(client, b.id, 20_000);
    const c = ended.request_counts;
    assert.equal(c.processing + c.succeeded + c.errored + c.canceled + c.expired, 3);
    const page = await client.messages.batches.list({ limit: 1 });
    assert.equal(page.data[0]!.id, b.id);
    assert.equal(page.has_more, true);
    const other = await gw.createKey('other');
    const otherClient = new Anthropic({ baseURL: gw.origin, apiKey: other.secret, maxRetries: 0 });
    await assert.rejects(otherClient.messages.batches.retrieve(b.id), (e: Json) => e.status === 404 && e.error?.error?.type === 'not_found_error');
    assert.equal((await otherClient.messages.batches.list()).data.length, 0);
  });

  test('past expires_at a batch ends: the lines that did not run are expired', async () => {
    // Rate-limited to one line a minute, so two of three lines are still queued when the batch is
    // made to expire (with at least 8 s of the clock minute left: limits count per minute).
    if (60_000 - (Date.now() % 60_000) < 8_000) await sleep(60_000 - (Date.now() % 60_000) + 100);
    const secret = (await (await fetch(`${gw.origin}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'slow', retention: 30, rate_limit: { requests_per_minute: 1 } }) })).json() as Json).key as string;
    const c = new Anthropic({ baseURL: gw.origin, apiKey: secret, maxRetries: 0 });
    // Lines 0, 2 and 4: lines the scripted upstream answers at once (no 429 of its own).
    const b = await c.messages.batches.create({ requests: requests(5).filter((_, i) => i % 2 === 0) });
    await until('one line done', async () => (await gw.store.db.selectFrom('batch_lines').select('line_no').where('batch_id', '=', b.id).where('state', '=', 'done').execute()).length === 1, 20_000);
    await gw.store.db.updateTable('batches').set({ expires_at: Date.now() - 1 }).where('id', '=', b.id).execute();
    const ended = await waitEnded(c, b.id, 20_000);
    assert.deepEqual(ended.request_counts, { processing: 0, succeeded: 1, errored: 0, canceled: 0, expired: 2 });
    const types = (await results(c, b.id)).map((l) => l.result.type).sort();
    assert.deepEqual(types, ['expired', 'expired', 'succeeded']);
  });

  test('retention none: the results are answered once, then the inputs and results are gone', async () => {
    const secret = (await (await fetch(`${gw.origin}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ephemeral', retention: 'none' }) })).json() as Json).key as string;
    const c = new Anthropic({ baseURL: gw.origin, apiKey: secret, maxRetries: 0 });
    const b = await c.messages.batches.create({ requests: requests(2) });
    await waitEnded(c, b.id, 20_000);
    const first = await results(c, b.id);
    assert.equal(first.length, 2);
    assert.equal(first.find((l) => l.custom_id === 'r-0')!.result.type, 'succeeded');
    await assert.rejects(results(c, b.id), (e: Json) => e.status === 404);
    const lines = await gw.store.db.selectFrom('batch_lines').select(['body', 'result']).where('batch_id', '=', b.id).execute();
    assert.deepEqual(lines, [{ body: '', result: null }, { body: '', result: null }]);
  });
});
