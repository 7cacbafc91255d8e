/**
 * Bad inputs are a clear 4xx, never a 500, never a crash: every error body is a valid envelope
 * whose `request_id` is the `x-request-id` header, no bad request reaches the upstream, and
 * after each one the gateway still answers a good request.
 *
 * Also: what the gateway forwards (larger output limit wins, unsupported optional parameters
 * and unknown fields are dropped).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateErrorResponse } from '../helpers/openapi.js';
import { disableKey } from '../../src/store/keys.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MESSAGES = [{ role: 'user', content: 'hi' }];
const GOOD = { model: 'test/model', messages: MESSAGES };

const UPSTREAM_OK = {
  json: {
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
  },
};

let up: Upstream;
/** Default body limit (10 MB); `test/model` has a huge context, `test/temp-only` lists only temperature. */
let gw: TestGateway;
/** `server.body_limit_bytes: 2048`. */
let small: TestGateway;

before(async () => {
  up = await startUpstream();
  up.setDefault(UPSTREAM_OK);
  const config = oneModelConfig(up.url, { model: { context_length: 100_000_000 } });
  config.models.push({
    id: 'test/temp-only',
    name: 'Temperature only',
    context_length: 8192,
    endpoints: [{ provider: 'up', upstream_model: 'temp-only-model', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['temperature'] }],
  });
  gw = await startGateway(config);
  small = await startGateway(oneModelConfig(up.url, { root: { server: { body_limit_bytes: 2048 } } }));
});

after(async () => {
  await gw?.close();
  await small?.close();
  await up?.close();
});

interface Send {
  path?: string;
  method?: string;
  /** A JSON value (serialised) or raw text / bytes. */
  json?: unknown;
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Replace the default `Authorization: Bearer <admin key>` (null = none). */
  auth?: string | null;
  target?: TestGateway;
}

function send(s: Send): Promise<Response> {
  const target = s.target ?? gw;
  const headers: Record<string, string> = { 'content-type': 'application/json', ...s.headers };
  const auth = s.auth === undefined ? `Bearer ${target.adminKey}` : s.auth;
  if (auth !== null) headers.authorization = auth;
  const method = s.method ?? 'POST';
  const body = s.raw !== undefined ? s.raw : s.json !== undefined ? JSON.stringify(s.json) : method === 'GET' ? undefined : '';
  return fetch(`${target.origin}${s.path ?? '/v1/chat/completions'}`, { method, headers, body });
}

interface ExpectedError {
  status: number;
  code: string;
  message: string | RegExp;
  param?: string | null;
  kind?: 'terminal' | 'retryable';
  scope?: string;
  type?: string;
}

/**
 * Send a bad request and check the exact envelope; check nothing reached the upstream and that
 * the gateway still serves a good request afterwards.
 */
async function expectError(s: Send, e: ExpectedError): Promise<Json> {
  const before = up.requests.length;
  const res = await send(s);
  const text = await res.text();
  assert.equal(res.status, e.status, text.slice(0, 300));
  assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  const body = JSON.parse(text) as Json;
  assert.deepEqual(validateErrorResponse(body), []);
  const requestId = res.headers.get('x-request-id');
  assert.match(requestId ?? '', /^req_[A-Za-z0-9]+$/);
  const err = body.error as Json;
  assert.equal(err.request_id, requestId);
  assert.equal(err.code, e.code);
  if (typeof e.message === 'string') assert.equal(err.message, e.message);
  else assert.match(err.message as string, e.message);
  assert.equal(err.param, e.param ?? null);
  assert.equal(err.kind, e.kind ?? 'terminal');
  assert.equal(err.scope, e.scope ?? 'request');
  assert.equal(err.type, e.type ?? 'invalid_request_error');
  assert.deepEqual(Object.keys(body), ['error']);
  assert.equal(up.requests.length, before, 'nothing reached the upstream');
  await expectServes(s.target ?? gw);
  return err;
}

/** A good request still gets a 200 with the upstream's answer. */
async function expectServes(target: TestGateway): Promise<void> {
  const res = await send({ json: GOOD, target });
  assert.equal(res.status, 200);
  const body = (await res.json()) as Json;
  assert.equal(body.choices[0].message.content, 'ok');
}

/** The upstream body of the next good-looking request. */
async function forwarded(json: Json, path = '/v1/chat/completions'): Promise<Json> {
  const before = up.requests.length;
  const res = await send({ json, path });
  assert.equal(res.status, 200, await res.clone().text());
  await res.arrayBuffer();
  assert.equal(up.requests.length, before + 1);
  return up.requests.at(-1)!.json as Json;
}

const invalid = (param: string | null, message: string): ExpectedError => ({ status: 400, code: 'invalid_request', param, message });

describe('body parsing', () => {
  test('malformed JSON → 400 invalid_json', async () => {
    await expectError({ raw: '{"model":' }, { status: 400, code: 'invalid_json', message: /^the request body is not valid JSON: / });
    await expectError({ raw: "{'model': 'test/model'}" }, { status: 400, code: 'invalid_json', message: /^the request body is not valid JSON: / });
    await expectError({ raw: '{"model":"test/model","messages":[],"temperature":NaN}' }, { status: 400, code: 'invalid_json', message: /^the request body is not valid JSON: / });
  });

  test('empty body → 400 invalid_json', async () => {
    await expectError({ raw: '' }, { status: 400, code: 'invalid_json', message: 'the request body is empty; send a JSON object' });
    await expectError({ raw: ' \n\t ' }, { status: 400, code: 'invalid_json', message: 'the request body is empty; send a JSON object' });
  });

  test('a JSON array (or any non-object) body → 400 invalid_request', async () => {
    for (const raw of ['[]', JSON.stringify([GOOD]), 'null', '"hi"', '42', 'true']) {
      await expectError({ raw }, invalid(null, 'the request body must be a JSON object'));
    }
  });

  test('deep nesting (10,000 arrays) → 400 invalid_json, fast', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const started = Date.now();
    await expectError({ raw: `{"model":"test/model","messages":[{"role":"user","content":"hi"}],"x":${deep}}` }, { status: 400, code: 'invalid_json', message: 'the request body is nested deeper than 64 levels (server.max_json_depth)' });
    await expectError({ raw: `{"model":"test/model","messages":[{"role":"user","content":${deep}}]}` }, { status: 400, code: 'invalid_json', message: 'the request body is nested deeper than 64 levels (server.max_json_depth)' });
    // Brackets inside strings are not nesting.
    const res = await send({ json: { ...GOOD, messages: [{ role: 'user', content: deep }] } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    assert.equal((up.requests.at(-1)!.json as Json).messages[0].content, deep);
    assert.ok(Date.now() - started < 2000);
  });

  test('a body over server.body_limit_bytes → 413 body_too_large', async () => {
    const big = { ...GOOD, messages: [{ role: 'user', content: 'x'.repeat(3000) }] };
    const expected: ExpectedError = { status: 413, code: 'body_too_large', message: 'the request body is larger than the configured limit (server.body_limit_bytes)' };
    await expectError({ json: big, target: small }, expected);
    // Without Content-Length (chunked): the limit holds while reading.
    const before = up.requests.length;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 6; i++) c.enqueue(new TextEncoder().encode(i === 0 ? '{"model":"test/model","messages":[{"role":"user","content":"' : 'y'.repeat(1000)));
        c.enqueue(new TextEncoder().encode('"}]}'));
        c.close();
      },
    });
    const res = await fetch(`${small.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${small.adminKey}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    assert.equal(res.status, 413);
    const err = ((await res.json()) as Json).error as Json;
    assert.equal(err.code, 'body_too_large');
    assert.equal(err.request_id, res.headers.get('x-request-id'));
    assert.equal(up.requests.length, before);
    await expectServes(small);
  });

  test('a huge but valid body under the limit (5 MB) is served and forwarded intact', async () => {
    const content = 'lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(90_000);
    assert.ok(content.length > 5_000_000);
    const body = await forwarded({ ...GOOD, messages: [{ role: 'user', content }] });
    assert.equal(body.messages[0].content.length, content.length);
    assert.ok(body.messages[0].content === content);
  });

  test('text/plain → 415 unsupported_media_type', async () => {
    await expectError({ json: GOOD, headers: { 'content-type': 'text/plain' } }, { status: 415, code: 'unsupported_media_type', message: 'send the body as Content-Type: application/json' });
  });

  test('a compressed body (Content-Encoding: gzip or br) → 415 naming content-encoding, not a JSON error with its bytes', async () => {
    const { gzipSync } = await import('node:zlib');
    for (const [encoding, raw] of [['gzip', gzipSync(JSON.stringify(GOOD))], ['br', JSON.stringify(GOOD)]] as const) {
      const res = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json', 'content-encoding': encoding }, body: raw });
      assert.equal(res.status, 415);
      const body = (await res.json()) as { error: { code: string; param: string; message: string } };
      assert.deepEqual([body.error.code, body.error.param, body.error.message], ['unsupported_media_type', 'content-encoding', `the request body is sent with Content-Encoding: ${encoding}; send it uncompressed`]);
    }
    const plain = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json', 'content-encoding': 'identity' }, body: '{"model":"test/model"}' });
    assert.equal(((await plain.json()) as { error: { param: string } }).error.param, 'messages', 'identity is read as sent');
  });

  test('another content type (form) → 415 unsupported_media_type', async () => {
    await expectError({ raw: 'model=test%2Fmodel', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, { status: 415, code: 'unsupported_media_type', message: 'send the body as Content-Type: application/json' });
  });

  test('__proto__ keys are ignored, not merged', async () => {
    const body = await forwarded(JSON.parse('{"model":"test/model","messages":[{"role":"user","content":"hi"}],"__proto__":{"temperature":2}}') as Json);
    assert.deepEqual(Object.keys(body).sort(), ['messages', 'model']);
  });
});

describe('field validation (param names the field)', () => {
  test('wrong types and values', async () => {
    await expectError({ json: { ...GOOD, temperature: 'hot' } }, invalid('temperature', 'temperature: must be number, got string'));
    await expectError({ json: { ...GOOD, stream: 'yes' } }, invalid('stream', 'stream: must be boolean, got string'));
    await expectError({ json: { ...GOOD, model: 5 } }, invalid('model', 'model: must be string, got number'));
    await expectError({ json: { ...GOOD, max_tokens: 0 } }, invalid('max_tokens', 'max_tokens: Number must be greater than or equal to 1'));
    await expectError({ json: { ...GOOD, max_tokens: 1.5 } }, invalid('max_tokens', 'max_tokens: must be integer, got float'));
    await expectError({ json: { ...GOOD, top_p: 1.5 } }, invalid('top_p', 'top_p: Number must be less than or equal to 1'));
  });

  test('messages: empty, wrong role, wrong content', async () => {
    await expectError({ json: { ...GOOD, messages: [] } }, invalid('messages', 'messages: must contain at least one message'));
    await expectError({ json: { ...GOOD, messages: [{ role: 'robot', content: 'beep' }] } }, invalid('messages[0].role', 'messages[0].role: must be one of "system", "developer", "user", "assistant", "tool"'));
    await expectError({ json: { ...GOOD, messages: [{ role: 'user', content: 5 }] } }, invalid('messages[0].content', 'messages[0].content: must be string, got number'));
    await expectError({ json: { ...GOOD, messages: ['hi'] } }, invalid('messages[0]', 'messages[0]: must be object, got string'));
  });

  test('stop with 5 entries', async () => {
    await expectError({ json: { ...GOOD, stop: ['a', 'b', 'c', 'd', 'e'] } }, invalid('stop', 'stop: at most 4 stop sequences are allowed'));
  });

  test('tool_choice naming no tool', async () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
    await expectError({ json: { ...GOOD, tools, tool_choice: { type: 'function', function: { name: 'get_time' } } } }, invalid('tool_choice.function.name', 'tool_choice.function.name: names no tool in tools: "get_time"'));
  });

  test('missing model, missing messages', async () => {
    await expectError({ json: { messages: MESSAGES } }, invalid('model', 'model: is required'));
    await expectError({ json: { model: 'test/model' } }, invalid('messages', 'messages: is required'));
  });

  test('n: 2', async () => {
    await expectError({ json: { ...GOOD, n: 2 } }, invalid('n', 'n: only n = 1 is supported'));
  });

  test('legacy /v1/completions: suffix on a chat-only endpoint, token-id prompts', async () => {
    await expectError(
      { path: '/v1/completions', json: { model: 'test/model', prompt: 'def f(', suffix: '\n  return 1' } },
      { status: 400, code: 'unsupported_parameter', param: 'suffix', message: 'suffix: not supported by the endpoints of "test/model", which serve chat only' },
    );
    for (const prompt of [[1, 2, 3], [[1, 2, 3]]]) {
      await expectError({ path: '/v1/completions', json: { model: 'test/model', prompt } }, invalid('prompt', 'prompt: must be a string (token-id prompts are not supported)'));
    }
  });

  test('a failed validation still leaves one generation record', async () => {
    const res = await send({ json: { ...GOOD, top_p: 7 } });
    assert.equal(res.status, 400);
    await res.arrayBuffer();
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('request_id', '=', res.headers.get('x-request-id')!).executeTakeFirstOrThrow();
    assert.equal(row.status, 'error');
    assert.equal(row.error_code, 'invalid_request');
    assert.equal(row.http_status, 400);
    assert.equal(row.requested_model, 'test/model');
  });
});

describe('routes and keys', () => {
  test('unknown route → 404 not_found', async () => {
    await expectError({ path: '/v1/nope', json: GOOD }, { status: 404, code: 'not_found', message: 'no route POST /v1/nope', type: 'not_found_error' });
    await expectError({ path: '/v1/nope?x=1', method: 'GET' }, { status: 404, code: 'not_found', message: 'no route GET /v1/nope', type: 'not_found_error' });
    await expectError({ path: '/nope', method: 'GET', auth: null }, { status: 404, code: 'not_found', message: 'no route GET /nope', type: 'not_found_error' });
  });

  test('unknown route with an empty JSON body → 404 not_found', async () => {
    await expectError({ path: '/nope', raw: '' }, { status: 404, code: 'not_found', message: 'no route POST /nope', type: 'not_found_error' });
  });

  test('GET on the POST routes → 405', async () => {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      // Anthropic's envelope on its routes.
      const res = await fetch(`${gw.origin}${path}`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
      assert.equal(res.status, 405);
      const body = (await res.json()) as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error');
      assert.equal(body.error.message, `use POST for ${path}`);
    }
    for (const path of ['/v1/chat/completions', '/v1/completions', '/v1/responses', '/v1/embeddings']) {
      await expectError({ path, method: 'GET' }, { status: 405, code: 'method_not_allowed', message: `use POST for ${path}` });
    }
  });

  test('missing key → 401 missing_api_key', async () => {
    const message = 'send your key as "Authorization: Bearer <key>" (or "x-api-key: <key>"); create one with `opinference keys create --name <name>`';
    const missing = { status: 401, code: 'missing_api_key', message, scope: 'key', type: 'authentication_error' };
    await expectError({ json: GOOD, auth: null }, missing);
    await expectError({ json: GOOD, auth: 'Bearer ' }, missing);
    await expectError({ json: GOOD, auth: 'Basic dXNlcjpwYXNz' }, missing);
  });

  test('wrong, unknown and disabled keys → 401 invalid_api_key', async () => {
    const wrong = { status: 401, code: 'invalid_api_key', message: 'the API key is not valid', scope: 'key', type: 'authentication_error' };
    await expectError({ json: GOOD, auth: 'Bearer wrong-key' }, wrong);
    await expectError({ json: GOOD, auth: 'Bearer op-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, wrong);
    const key = await gw.createKey('to-disable');
    assert.equal(await disableKey(gw.store.db, key.id), 1);
    await expectError({ json: GOOD, auth: `Bearer ${key.secret}` }, { ...wrong, message: 'the API key is disabled' });
    const live = await gw.createKey('live');
    const res = await send({ json: GOOD, auth: `Bearer ${live.secret}` });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  });

  test('unknown model → 404 with exactly the seed envelope', async () => {
    const res = await send({ json: { ...GOOD, model: 'no-such/model' } });
    assert.equal(res.status, 404);
    const body = (await res.json()) as Json;
    assert.deepEqual(validateErrorResponse(body), []);
    const requestId = res.headers.get('x-request-id')!;
    assert.match(requestId, /^req_/);
    assert.deepEqual(body, {
      error: {
        code: 'no_endpoint_available',
        message: 'no endpoint serves model "no-such/model"',
        kind: 'terminal',
        scope: 'model',
        type: 'invalid_request_error',
        param: 'model',
        request_id: requestId,
        metadata: { unknown_models: ['no-such/model'] },
      },
    });
    assert.equal(JSON.stringify(body).startsWith('{"error":{"code":"no_endpoint_available","message":"no endpoint serves model \\"no-such/model\\"","kind":"terminal","scope":"model","type":"invalid_request_error","param":"model","request_id":"req_'), true);
    await expectServes(gw);
  });
});

describe('what reaches the upstream', () => {
  test('max_tokens and max_completion_tokens both sent → the larger, as max_completion_tokens', async () => {
    const a = await forwarded({ ...GOOD, max_tokens: 300, max_completion_tokens: 100 });
    assert.equal(a.max_completion_tokens, 300);
    assert.equal('max_tokens' in a, false);
    const b = await forwarded({ ...GOOD, max_tokens: 50, max_completion_tokens: 700 });
    assert.equal(b.max_completion_tokens, 700);
    assert.equal('max_tokens' in b, false);
  });

  test('an optional parameter the endpoint does not list is dropped (and recorded)', async () => {
    const res = await send({ json: { model: 'test/temp-only', messages: MESSAGES, seed: 42, temperature: 0.5, top_p: 0.9 } });
    assert.equal(res.status, 200);
    const id = ((await res.json()) as Json).id as string;
    assert.deepEqual(up.requests.at(-1)!.json, { model: 'temp-only-model', messages: MESSAGES, temperature: 0.5 });
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual((JSON.parse(row.detail) as Json).dropped_parameters, ['top_p', 'seed']);
  });

  test('unknown top-level fields are not forwarded', async () => {
    const body = await forwarded({ ...GOOD, temperature: 0.2, foo: 1, extra_body: { x: 1 }, safe_prompt: true, api_key: 'sk-leak', metadata: { a: 'b' } });
    assert.deepEqual(body, { model: 'upstream-model', messages: MESSAGES, temperature: 0.2 });
  });
});
