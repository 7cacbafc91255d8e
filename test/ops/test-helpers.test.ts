/**
 * Proves the test helpers against real data: the OpenAPI validator (test/helpers/openapi.ts)
 * on recorded OpenAI responses, and the fake upstream (test/helpers/replay-upstream.ts) as
 * seen by plain HTTP clients.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  openapiAvailable,
  validateAgainst,
  validateChatCompletion,
  validateChatCompletionChunk,
  validateCompletion,
  validateCompletionChunk,
  validateErrorResponse,
  validateModelList,
} from '../helpers/openapi.js';
import {
  encodePieces,
  fixturesAvailable,
  loadChunks,
  loadJson,
  startUpstream,
  type Upstream,
} from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noFixtures = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';
const noSpec = openapiAvailable() ? false : 'the OpenAI spec ../shared/specs/openai-openapi.yaml is absent';
const noSpecOrFixtures = noSpec || noFixtures;

/** Splits an SSE body into event blocks and returns each block's `data:` payload. */
function ssePayloads(body: string): string[] {
  return body
    .split(/\r?\n\r?\n/)
    .filter((block) => block.trim() !== '')
    .map((block) =>
      block
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n'),
    );
}

/** GET with node:http; resolves with the status and each body `data` event's bytes. */
function getPieces(url: string): Promise<{ status: number; pieces: Buffer[] }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const pieces: Buffer[] = [];
        res.on('data', (chunk: Buffer) => pieces.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, pieces }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

describe('openapi validator', { skip: noSpec }, () => {
  test('a recorded chat completion validates; breaking it is reported with its path', { skip: noSpecOrFixtures }, () => {
    const completion = loadJson('openai/openai-text.json') as Json;
    assert.equal(completion.object, 'chat.completion');
    assert.deepEqual(validateChatCompletion(completion), []);

    const broken = structuredClone(completion);
    delete broken.choices[0].message.role;
    broken.choices[0].finish_reason = 'done';
    assert.deepEqual(validateChatCompletion(broken), [
      '/choices/0/finish_reason must be equal to one of the allowed values (allowed: "stop", "length", "tool_calls", "content_filter", "function_call")',
      "/choices/0/message must have required property 'role'",
    ]);

    const noId = structuredClone(completion);
    delete noId.id;
    assert.deepEqual(validateChatCompletion(noId), ["(root) must have required property 'id'"]);
  });

  test('every recorded chat chunk validates, including usage:null and the usage-only chunk', { skip: noSpecOrFixtures }, () => {
    const lines = loadChunks('openai/openai-text.chunks.txt');
    assert.equal(lines.length, 303);
    for (const [i, line] of lines.entries()) {
      assert.deepEqual(validateChatCompletionChunk(JSON.parse(line)), [], `chunk ${i}`);
    }
    const last = JSON.parse(lines.at(-1) as string) as Json;
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.total_tokens, 316);
    assert.equal((JSON.parse(lines[0] as string) as Json).usage, null);
  });

  test('a chunk with finish_reason "bogus" is rejected with a message naming finish_reason', () => {
    const chunk = {
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'bogus' }],
    };
    assert.deepEqual(validateChatCompletionChunk({ ...chunk, choices: [{ ...chunk.choices[0], finish_reason: null }] }), []);
    const errors = validateChatCompletionChunk(chunk);
    assert.ok(errors.length > 0);
    assert.ok(errors.some((e) => e.includes('/choices/0/finish_reason') && e.includes('allowed values')), errors.join('\n'));
    assert.ok(errors.every((e) => e.includes('finish_reason')), errors.join('\n'));
  });

  test('gateway extension fields are accepted (reasoning, cost, extra error keys)', () => {
    const chunk = {
      id: 'c1',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { reasoning: 'thinking…' }, finish_reason: null }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cost: 0.0012 },
    };
    assert.deepEqual(validateChatCompletionChunk(chunk), []);
    const completion = {
      id: 'c2',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null, reasoning: 'r' }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, cost: 0 },
    };
    assert.deepEqual(validateChatCompletion(completion), []);
    // usage is a nullable $ref in the chunk schema: a wrong type inside is still caught.
    const badUsage = validateChatCompletionChunk({ ...chunk, usage: { prompt_tokens: 'three', completion_tokens: 4, total_tokens: 7 } });
    assert.ok(badUsage.includes('/usage/prompt_tokens must be integer'), badUsage.join('\n'));
  });

  test('error bodies: the minimal shape, gateway extras, and a recorded OpenAI error validate', () => {
    assert.deepEqual(validateErrorResponse({ error: { message: 'bad', type: 'invalid_request_error', param: null, code: null } }), []);
    assert.deepEqual(
      validateErrorResponse({
        error: { message: 'rate limited', type: 'rate_limit_error', param: null, code: 'rate_limited', kind: 'rate_limit', scope: 'key', request_id: 'req_1' },
      }),
      [],
    );
    assert.deepEqual(validateErrorResponse({ error: { message: 'no type' } }), [
      "/error must have required property 'type'",
      "/error must have required property 'param'",
      "/error must have required property 'code'",
    ]);
    if (!noFixtures) {
      assert.deepEqual(validateErrorResponse(loadJson('openai/reasoning-model-legacy-parameter-error.json')), []);
    }
  });

  test('legacy completions: the recorded body validates; streamed chunks need the local chunk schema', { skip: noSpecOrFixtures }, () => {
    assert.deepEqual(validateCompletion(loadJson('openai/openai-completion-text.json')), []);
    const first = JSON.parse(loadChunks('openai/openai-completion-text.chunks.txt')[0] as string) as Json;
    assert.equal(first.choices[0].finish_reason, null);
    assert.equal(first.usage, null);
    // The official schema rejects what the real API streams ...
    const official = validateCompletion(first);
    assert.ok(official.some((e) => e.startsWith('/choices/0/finish_reason')), official.join('\n'));
    assert.ok(official.some((e) => e.startsWith('/usage')), official.join('\n'));
    // ... the chunk schema accepts every recorded chunk, and still checks the enum.
    for (const line of loadChunks('openai/openai-completion-text.chunks.txt')) {
      assert.deepEqual(validateCompletionChunk(JSON.parse(line)), []);
    }
    const bad = validateCompletionChunk({ ...first, choices: [{ ...first.choices[0], finish_reason: 'tool_calls' }] });
    assert.ok(bad.some((e) => e.startsWith('/choices/0/finish_reason')), bad.join('\n'));
  });

  test('model list validates with extra model fields; missing owned_by is reported', () => {
    const model = { id: 'openai/gpt-x', object: 'model', created: 1700000000, owned_by: 'openai', context_length: 8192, pricing: { prompt: '0' } };
    assert.deepEqual(validateModelList({ object: 'list', data: [model] }), []);
    const { owned_by: _ownedBy, ...noOwner } = model;
    assert.deepEqual(validateModelList({ object: 'list', data: [noOwner] }), ["/data/0 must have required property 'owned_by'"]);
  });

  test('unknown schema names throw; validators are cached', () => {
    assert.throws(() => validateAgainst('NoSuchSchema', {}), /no schema named NoSuchSchema/);
    const started = performance.now();
    for (let i = 0; i < 200; i += 1) validateErrorResponse({ error: { message: 'm', type: 't', param: null, code: null } });
    assert.ok(performance.now() - started < 200, 'cached validation should be fast');
  });
});

describe('replay upstream', () => {
  let upstream: Upstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(async () => {
    await upstream.close();
  });

  test('url is a 127.0.0.1 base URL ending in /v1', () => {
    assert.match(upstream.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
  });

  test('records the request and answers with the queued JSON', async () => {
    const before = upstream.requests.length;
    const sent = { model: 'm', messages: [{ role: 'user', content: 'héllo 😀' }], stream: false };
    upstream.enqueue({ status: 201, headers: { 'x-upstream': 'yes' }, json: { ok: true } });
    const res = await fetch(`${upstream.url}/chat/completions?x=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
      body: JSON.stringify(sent),
    });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('x-upstream'), 'yes');
    assert.deepEqual(await res.json(), { ok: true });

    assert.equal(upstream.requests.length, before + 1);
    const recorded = upstream.requests[before];
    assert.ok(recorded);
    assert.equal(recorded.method, 'POST');
    assert.equal(recorded.path, '/v1/chat/completions?x=1');
    assert.equal(recorded.headers.authorization, 'Bearer sk-test');
    assert.equal(recorded.headers['content-type'], 'application/json');
    assert.equal(recorded.body, JSON.stringify(sent));
    assert.deepEqual(recorded.json, sent);
  });

  test('FIFO queue, then the default, then a 500 "no scripted response"', async () => {
    upstream.enqueue({ text: 'first' }, { status: 502, text: '<html>Bad gateway</html>', headers: { 'content-type': 'text/html' } });
    assert.equal(upstream.pendingCount(), 2);
    const r1 = await fetch(`${upstream.url}/models`);
    assert.equal(await r1.text(), 'first');
    const r2 = await fetch(`${upstream.url}/models`);
    assert.equal(r2.status, 502);
    assert.equal(r2.headers.get('content-type'), 'text/html');
    assert.equal(await r2.text(), '<html>Bad gateway</html>');
    assert.equal(upstream.pendingCount(), 0);

    const r3 = await fetch(`${upstream.url}/models`);
    assert.equal(r3.status, 500);
    assert.deepEqual(await r3.json(), { error: { message: 'no scripted response' } });
    const recorded = upstream.requests.at(-1);
    assert.equal(recorded?.method, 'GET');
    assert.equal(recorded?.body, '');
    assert.equal(recorded?.json, undefined);

    upstream.setDefault({ json: { fallback: 1 } });
    try {
      const r4 = await fetch(`${upstream.url}/models`);
      assert.deepEqual(await r4.json(), { fallback: 1 });
      const r5 = await fetch(`${upstream.url}/models`);
      assert.deepEqual(await r5.json(), { fallback: 1 });
    } finally {
      upstream.setDefault(undefined);
    }
  });

  test('replays a recorded OpenAI stream split every 7 bytes: the payloads arrive intact, then [DONE]', { skip: noFixtures }, async () => {
    const lines = loadChunks('openai/openai-text.chunks.txt');
    const pieces = encodePieces({ sse: lines, splitAt: 7 });
    const total = pieces.reduce((n, p) => n + p.length, 0);
    assert.equal(pieces.length, Math.ceil(total / 7));
    assert.ok(pieces.slice(0, -1).every((p) => p.length === 7));

    upstream.enqueue({ sse: lines, splitAt: 7 });
    const res = await fetch(`${upstream.url}/chat/completions`, { method: 'POST', body: '{"stream":true}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const body = await res.text();
    assert.equal(Buffer.byteLength(body), total);
    assert.ok(body.endsWith('data: [DONE]\n\n'));
    assert.deepEqual(ssePayloads(body), [...lines, '[DONE]']);
  });

  test('a 3-byte split cuts UTF-8 characters yet the body arrives intact', async () => {
    const text = 'aé€😀b';
    const bytes = Buffer.from(text, 'utf8');
    assert.equal(bytes.length, 11);
    upstream.enqueue({ text, splitAt: 3, delayMs: 5 });
    const { status, pieces } = await getPieces(`${upstream.url}/x`);
    assert.equal(status, 200);
    assert.ok(pieces.length >= 4, `expected at least 4 pieces, got ${pieces.length}`);
    assert.ok(pieces.every((p) => p.length <= 3));
    // The first piece is "a" + the 2 bytes of "é"; the second starts mid "€".
    assert.deepEqual([...(pieces[0] ?? [])], [0x61, 0xc3, 0xa9]);
    assert.equal(Buffer.concat(pieces).toString('utf8'), text);
    // Offsets split too.
    assert.deepEqual(encodePieces({ text, splitAt: [1, 4, 4, 99] }).map((p) => p.length), [1, 3, 7]);
  });

  test('anthropic and gemini framing of recorded streams; hand-made raw chunks pass through', { skip: noFixtures }, async () => {
    const anthropic = loadChunks('anthropic/anthropic-text.chunks.txt');
    const framed = Buffer.concat(encodePieces({ sse: anthropic, framing: 'anthropic' })).toString('utf8');
    assert.ok(framed.startsWith(`event: message_start\ndata: ${anthropic[0]}\n\n`));
    assert.ok(framed.includes('event: ping\ndata: {"type":"ping"}\n\n'));
    assert.equal(ssePayloads(framed).length, anthropic.length);
    assert.ok(!framed.includes('[DONE]'));
    const lastType = (JSON.parse(anthropic.at(-1) as string) as Json).type;
    assert.equal(lastType, 'message_stop');
    const cut = Buffer.concat(encodePieces({ sse: anthropic, framing: 'anthropic', endWithoutDone: true })).toString('utf8');
    assert.equal(ssePayloads(cut).length, anthropic.length - 1);

    const gemini = loadChunks('google/google-text.chunks.txt');
    upstream.enqueue({ sse: gemini, framing: 'gemini', splitAt: 5 });
    const res = await fetch(`${upstream.url}/x`);
    const body = await res.text();
    assert.equal(body, gemini.map((l) => `data: ${l}\r\n\r\n`).join(''));

    upstream.enqueue({ rawChunks: [': keep-alive\r\n\r\n', 'data:{"a":1}\r\n', Buffer.from('\r\n')], delayMs: 2 });
    const raw = await (await fetch(`${upstream.url}/x`)).text();
    assert.equal(raw, ': keep-alive\r\n\r\ndata:{"a":1}\r\n\r\n');

    const noDone = Buffer.concat(encodePieces({ sse: ['{"a":1}'], done: false })).toString('utf8');
    assert.equal(noDone, 'data: {"a":1}\n\n');
  });

  test('destroyAfterBytes delivers exactly that many bytes, then the client sees an error', async () => {
    const sse = ['{"n":1}', '{"n":2}', '{"n":3}'];
    const full = Buffer.concat(encodePieces({ sse }));
    upstream.enqueue({ sse, destroyAfterBytes: 20 });
    const res = await fetch(`${upstream.url}/chat/completions`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const received: Uint8Array[] = [];
    let failure: unknown;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        received.push(value);
      }
    } catch (error) {
      failure = error;
    }
    assert.ok(failure instanceof Error, 'reading the body should fail');
    assert.equal(failure.message, 'terminated');
    assert.deepEqual(Buffer.concat(received), full.subarray(0, 20));
    assert.equal(upstream.connectionsAborted, 0, 'a server-side reset is not a client abort');
  });

  test('a client abort during hangBeforeHeaders is counted and waitForAbort resolves', async () => {
    const abortsBefore = upstream.connectionsAborted;
    upstream.enqueue({ hangBeforeHeaders: true });
    const controller = new AbortController();
    const pending = fetch(`${upstream.url}/chat/completions`, { method: 'POST', body: '{}', signal: controller.signal });
    // Wait until the request reached the server, then give up on it.
    const deadline = Date.now() + 2000;
    while (upstream.requests.at(-1)?.path !== '/v1/chat/completions' || upstream.pendingCount() !== 0) {
      assert.ok(Date.now() < deadline, 'request never reached the upstream');
      await new Promise((r) => setTimeout(r, 5));
    }
    controller.abort();
    await assert.rejects(pending, { name: 'AbortError' });
    await upstream.waitForAbort(2000);
    assert.equal(upstream.connectionsAborted, abortsBefore + 1);
  });

  test('a client abort mid-stream (slow pieces) is counted too', async () => {
    const abortsBefore = upstream.connectionsAborted;
    upstream.enqueue({ sse: ['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}'], delayMs: 200, delayBeforeHeadersMs: 10 });
    const controller = new AbortController();
    const res = await fetch(`${upstream.url}/chat/completions`, { method: 'POST', body: '{}', signal: controller.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    assert.equal(Buffer.from(first.value ?? []).toString('utf8'), 'data: {"n":1}\n\n');
    controller.abort();
    await upstream.waitForAbort(2000);
    assert.equal(upstream.connectionsAborted, abortsBefore + 1);
    // No further abort happened: the next waiter times out.
    await assert.rejects(upstream.waitForAbort(50), /no client abort #\d+ within 50 ms/);
  });

  test('invalid scripts fail at enqueue time', () => {
    assert.throws(() => upstream.enqueue({ json: {}, text: 'x' }), /only one of json, text/);
    assert.throws(() => upstream.enqueue({ sse: ['not json'], framing: 'anthropic' }), /anthropic framing/);
    assert.equal(upstream.pendingCount(), 0);
  });

  test('close() destroys a hanging connection', async () => {
    const own = await startUpstream();
    own.enqueue({ hangBeforeHeaders: true });
    const pending = fetch(`${own.url}/x`).then(
      () => 'answered',
      () => 'failed',
    );
    const deadline = Date.now() + 2000;
    while (own.requests.length === 0) {
      assert.ok(Date.now() < deadline, 'request never reached the upstream');
      await new Promise((r) => setTimeout(r, 5));
    }
    await own.close();
    assert.equal(await pending, 'failed');
    assert.equal(own.connectionsAborted, 0);
  });
});
