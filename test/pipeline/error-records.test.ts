/**
 * Why a request failed, as its generation record keeps it (docs/records.md, "Why a request
 * failed"): under retention `none` the catalog's text for the code, the error's `param` and the
 * upstream's status, code, type and param, never the request's text; the message the client got
 * when retention keeps text; the upstream's message under `none` only with
 * `records.keep_upstream_error_message`. Read back through `GET /v1/generation`, on SQLite and
 * (with OP_TEST_DATABASE_URL) PostgreSQL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CATALOG } from '../../src/errors/catalog.js';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Text of the request that an upstream quotes back in its error message. */
const SECRET = 'SECRET-user-text-7f3a';

const badRequest = (): ScriptedResponse => ({
  status: 400,
  json: { error: { message: `Invalid value for 'temperature': "${SECRET}" is not a number`, type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' } },
});
const rateLimited = (): ScriptedResponse => ({
  status: 429,
  json: { error: { message: `Rate limit reached for ${SECRET}`, type: 'requests', param: null, code: 'rate_limit_exceeded' } },
});
const serverError = (): ScriptedResponse => ({ status: 500, json: { error: { message: `The server had an error processing ${SECRET}`, type: 'server_error', param: null, code: null } } });

describe('error records', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let keep: TestGateway;

  before(async () => {
    upstream = await startUpstream();
    // One endpoint, one attempt: the upstream's own error is the request's error.
    const base = oneModelConfig(upstream.url, { provider: { timeouts: { first_token_ms: 300 } } });
    gw = await startGateway(base);
    keep = await startGateway({ ...base, records: { keep_upstream_error_message: true } });
  });
  after(async () => {
    await gw?.close();
    await keep?.close();
    await upstream?.close();
  });

  const post = (g: TestGateway, body: Json, key = g.adminKey) =>
    fetch(`${g.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const chat = (extra: Json = {}) => ({ model: 'test/model', messages: [{ role: 'user', content: `hello ${SECRET}` }], ...extra });

  /** Send, then read the record back (after it is written) and the row as stored. */
  async function failed(g: TestGateway, body: Json, status: number, key?: string): Promise<{ record: Json; row: Json }> {
    const res = await post(g, body, key);
    assert.equal(res.status, status, await res.clone().text());
    await res.text();
    const id = res.headers.get('x-op-generation-id')!;
    await g.flush();
    const lookup = await fetch(`${g.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${g.adminKey}` } });
    assert.equal(lookup.status, 200);
    const record = ((await lookup.json()) as Json).data as Json;
    const row = (await g.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow()) as Json;
    return { record, row };
  }

  /** Every stored column of a row, as text. */
  const stored = (row: Json) => JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  /** No stored column holds the request's text. */
  const assertNoRequestText = (row: Json) => assert.equal(stored(row).includes(SECRET), false, stored(row));

  test('retention none, upstream 400 with an OpenAI error body: the catalog text, the param, the upstream code, type and param', async () => {
    upstream.enqueue(badRequest());
    const { record, row } = await failed(gw, chat(), 400);
    assert.equal(record.status, 'error');
    assert.equal(record.error_code, 'upstream_bad_request');
    assert.equal(record.error_message, ERROR_CATALOG.upstream_bad_request.description);
    assert.equal(record.error_param, 'temperature');
    assert.deepEqual(record.upstream_error, { status: 400, code: 'invalid_value', type: 'invalid_request_error', param: 'temperature' });
    assert.equal(row.error_message, null);
    assertNoRequestText(row);
  });

  test('retention none, upstream 429 and 500: status, code and type kept, message not', async () => {
    upstream.enqueue(rateLimited());
    const limited = await failed(gw, chat(), 429);
    assert.equal(limited.record.error_code, 'upstream_rate_limited');
    assert.equal(limited.record.error_message, ERROR_CATALOG.upstream_rate_limited.description);
    assert.deepEqual(limited.record.upstream_error, { status: 429, code: 'rate_limit_exceeded', type: 'requests', param: null });
    assertNoRequestText(limited.row);

    upstream.enqueue(serverError());
    const broken = await failed(gw, chat(), 502);
    assert.equal(broken.record.error_code, 'upstream_error');
    assert.equal(broken.record.error_message, ERROR_CATALOG.upstream_error.description);
    assert.equal(broken.record.error_param, null);
    assert.deepEqual(broken.record.upstream_error, { status: 500, code: null, type: 'server_error', param: null });
    assertNoRequestText(broken.row);
  });

  test('the upstream\'s code, type and param are kept with the provider\'s secrets redacted', async () => {
    upstream.enqueue({ status: 400, json: { error: { message: 'bad key', type: 'auth sk-upstream-secret', param: 'sk-upstream-secret', code: 'key sk-upstream-secret' } } });
    const { record, row } = await failed(keep, chat(), 400);
    assert.deepEqual(record.upstream_error, { status: 400, code: 'key [redacted]', type: 'auth [redacted]', param: '[redacted]', message: 'bad key' });
    assert.equal(stored(row).includes('sk-upstream-secret'), false);
  });

  test('retention none, upstream timeout: the catalog text, no upstream error (nothing was answered)', async () => {
    upstream.enqueue({ delayBeforeHeadersMs: 2_000, json: { choices: [] } });
    const { record, row } = await failed(gw, chat(), 504);
    assert.equal(record.error_code, 'upstream_timeout');
    assert.equal(record.error_message, ERROR_CATALOG.upstream_timeout.description);
    assert.equal(record.upstream_error, null);
    assert.equal(record.provider_responses[0].status, null);
    assert.equal(row.error_message, null);
  });

  test('retention none, gateway refusals: a message that echoes the request is not kept, the catalog text and param are', async () => {
    // The rendered messages name the request's values ("…may not use model \"test/other-…\"").
    const key = await gw.createKey('narrow');
    await gw.store.db.updateTable('api_keys').set({ settings: JSON.stringify({ allowed_models: ['test/model'] }) }).where('id', '=', key.id).execute();
    const other = `test/other-${SECRET}`;
    const forbidden = await failed(gw, chat({ model: other }), 403, key.secret);
    assert.equal(forbidden.record.error_code, 'model_not_allowed');
    assert.equal(forbidden.record.error_message, ERROR_CATALOG.model_not_allowed.description);
    assert.equal(forbidden.record.error_param, 'model');
    assert.equal(forbidden.record.upstream_error, null);
    assert.equal(forbidden.row.error_message, null);
    // The model asked for is a column of its own (metadata, kept under every retention).
    assert.equal(forbidden.record.requested_model, other);

    const invalid = await failed(gw, chat({ temperature: SECRET }), 400);
    assert.equal(invalid.record.error_code, 'invalid_request');
    assert.equal(invalid.record.error_message, ERROR_CATALOG.invalid_request.description);
    assert.equal(invalid.record.error_param, 'temperature');
    assertNoRequestText(invalid.row);
  });

  test('a retention that keeps text keeps the message the client got, the upstream message in it', async () => {
    upstream.enqueue(badRequest());
    const { record, row } = await failed(gw, chat({ op: { retention: 7 } }), 400);
    assert.equal(record.retention, 7);
    assert.equal(record.error_message, `Invalid value for 'temperature': "${SECRET}" is not a number`);
    assert.equal(row.error_message, record.error_message);
    assert.deepEqual(record.upstream_error, { status: 400, code: 'invalid_value', type: 'invalid_request_error', param: 'temperature' });
  });

  test('records.keep_upstream_error_message: the upstream message kept under retention none, the gateway message still not', async () => {
    upstream.enqueue(badRequest());
    const { record, row } = await failed(keep, chat(), 400);
    assert.equal(record.retention, 'none');
    assert.equal(record.error_message, ERROR_CATALOG.upstream_bad_request.description);
    assert.deepEqual(record.upstream_error, {
      status: 400, code: 'invalid_value', type: 'invalid_request_error', param: 'temperature', message: `Invalid value for 'temperature': "${SECRET}" is not a number`,
    });
    assert.equal(row.error_message, null);

    const refused = await failed(keep, chat({ model: `test/unknown-${SECRET}` }), 404);
    assert.equal(refused.record.error_code, 'no_endpoint_available');
    assert.equal(refused.record.error_message, ERROR_CATALOG.no_endpoint_available.description);
    assert.equal(refused.record.upstream_error, null);
    assert.equal(refused.row.error_message, null);
  });
});
