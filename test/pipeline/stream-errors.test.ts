/**
 * Errors inside an HTTP 200 (issue 9 §4): in every shape upstreams send them — a top-level
 * `error` object in a data event, an `error` inside the choice with `finish_reason: "error"`,
 * an SSE event named `error`, Anthropic's `error` event, Gemini's `error` object — and in
 * complete JSON bodies. Before any content such an error is a failed attempt: the router fails
 * over, or, with nothing left, answers with the error mapped through the catalog (by the
 * upstream's own code when it names one) and records an error, never an empty success. After
 * content the stream ends with one error chunk, then [DONE].
 *
 * The shape table runs on one gateway (the test routing settings keep failures from tripping
 * breakers or cooldowns); a fresh set of scripted upstreams answers on port 0. After it, the same
 * behaviour per provider kind, each on its provider's own harness: the OpenAI-compatible relay
 * (helpers/relay-harness.ts: one fresh gateway per test, strict SSE reader, also a connection
 * reset mid-stream), Anthropic (helpers/anthropic-gateway.ts) and Gemini
 * (helpers/gemini-gateway.ts), with the official SDK's view of a mid-stream error.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletionChunk, validateErrorResponse } from '../helpers/openapi.js';
import { checkErrorChunk, checkErrorResponse, checkSuccessfulStream, contentOf, frame, generationRow, post as relayPost, readStream, setup as relaySetup, streamRequest, textStream, upChunk } from '../helpers/relay-harness.js';
import { errorOf, overloaded, parseSse, setup as anthropicSetup, START, TEXT_START, textDelta, anthropicError } from '../helpers/anthropic-gateway.js';
import { gError, openaiChunk, startGeminiGateway, textEvent, type GeminiGateway } from '../helpers/gemini-gateway.js';
import { sseJsonEvents } from '../helpers/sse.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Kind = 'openai' | 'anthropic' | 'gemini';

const ev = (e: Json): string => JSON.stringify(e);

// --- OpenAI-compatible chunks
const oaChunk = (delta: Json, finish: string | null = null, extra: Json = {}): string =>
  ev({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish, ...extra }] });
const OA_ROLE = oaChunk({ role: 'assistant', content: '' });
const oaText = (t: string) => oaChunk({ content: t });
const oaBody = (choice: Json, extra: Json = {}) => ({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, ...choice }], ...extra });

// --- Anthropic events
const AN_START = ev({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 9, output_tokens: 1 } } });
const AN_TEXT_START = ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
const anText = (t: string) => ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } });
const anError = (type: string, message: string) => ev({ type: 'error', error: { type, message } });

// --- Gemini events
const geText = (t: string) => ev({ candidates: [{ index: 0, content: { role: 'model', parts: [{ text: t }] } }] });

/** What the fallback endpoint answers: a plain OpenAI stream, or a JSON completion. */
const FALLBACK_STREAM: ScriptedResponse = { sse: [OA_ROLE, oaText('from fallback'), oaChunk({}, 'stop'), ev({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })] };
const FALLBACK_JSON: ScriptedResponse = { json: oaBody({ message: { role: 'assistant', content: 'from fallback' }, finish_reason: 'stop' }, { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }) };

/** One error shape: what the upstream sends, and the catalog error the client must get. */
interface Shape {
  name: string;
  kind: Kind;
  stream: boolean;
  response: ScriptedResponse;
  status: number;
  code: string;
  /** Whether another endpoint of the same model is tried (false: the request itself was refused). */
  failsOver: boolean;
  param?: string;
  message: RegExp;
}

const CONTEXT_MESSAGE = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";

const SHAPES: Shape[] = [
  // OpenAI-compatible streams
  {
    name: 'top-level `error` object naming context_length_exceeded',
    kind: 'openai', stream: true, status: 400, code: 'context_length_exceeded', failsOver: false, param: 'messages', message: /maximum context length/,
    response: { sse: [OA_ROLE, ev({ error: { message: CONTEXT_MESSAGE, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } })] },
  },
  {
    name: 'top-level `error` object with a numeric 429 (OpenRouter)',
    kind: 'openai', stream: true, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /Rate limit exceeded/,
    response: { rawChunks: [': OPENROUTER PROCESSING\n\n', `data: ${ev({ error: { message: 'Rate limit exceeded: free-models-per-min', code: 429 } })}\n\n`, 'data: [DONE]\n\n'] },
  },
  {
    name: '`error` inside the choice with finish_reason "error", named rate_limit_exceeded',
    kind: 'openai', stream: true, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /slow down/,
    response: { sse: [OA_ROLE, oaChunk({ content: '' }, 'error', { error: { message: 'slow down', code: 'rate_limit_exceeded' } })] },
  },
  {
    name: 'finish_reason "error" without an error object',
    kind: 'openai', stream: true, status: 502, code: 'upstream_error', failsOver: true, message: /finish_reason "error"/,
    response: { sse: [OA_ROLE, oaChunk({}, 'error')] },
  },
  {
    name: 'an SSE event named `error` with a bare error object',
    kind: 'openai', stream: true, status: 503, code: 'upstream_overloaded', failsOver: true, message: /server is overloaded/,
    response: { rawChunks: [`data: ${OA_ROLE}\n\n`, `event: error\ndata: ${ev({ message: 'The server is overloaded', code: 'overloaded' })}\n\n`] },
  },
  {
    name: 'an SSE event named `error` with plain text (llama.cpp style)',
    kind: 'openai', stream: true, status: 502, code: 'upstream_error', failsOver: true, message: /slot unavailable/,
    response: { rawChunks: ['event: error\ndata: slot unavailable\n\n'] },
  },
  {
    name: 'nothing generated, no finish reason, only usage before [DONE]',
    kind: 'openai', stream: true, status: 502, code: 'upstream_connection_failed', failsOver: true, message: /ended before the generation finished/,
    response: { sse: [OA_ROLE, ev({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 0, total_tokens: 9 } })] },
  },
  // Anthropic streams
  {
    name: 'Anthropic `error` event (rate_limit_error) after message_start',
    kind: 'anthropic', stream: true, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /Number of request tokens/,
    response: { framing: 'anthropic', sse: [AN_START, ev({ type: 'ping' }), anError('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit')] },
  },
  {
    name: 'Anthropic `error` event (overloaded_error) before message_start',
    kind: 'anthropic', stream: true, status: 503, code: 'upstream_overloaded', failsOver: true, message: /Overloaded/,
    response: { framing: 'anthropic', sse: [anError('overloaded_error', 'Overloaded')] },
  },
  // Gemini streams
  {
    name: 'Gemini `error` object with code 429 RESOURCE_EXHAUSTED',
    kind: 'gemini', stream: true, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /Resource has been exhausted/,
    response: { framing: 'gemini', sse: [ev({ error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } })] },
  },
  {
    name: 'Gemini `error` object with only a canonical status (UNAVAILABLE)',
    kind: 'gemini', stream: true, status: 503, code: 'upstream_overloaded', failsOver: true, message: /model is overloaded/,
    response: { framing: 'gemini', sse: [ev({ error: { message: 'The model is overloaded. Please try again later.', status: 'UNAVAILABLE' } })] },
  },
  // Complete (non-streamed) bodies with HTTP 200
  {
    name: 'JSON body with a top-level `error` naming context_length_exceeded',
    kind: 'openai', stream: false, status: 400, code: 'context_length_exceeded', failsOver: false, param: 'messages', message: /maximum context length/,
    response: { json: { error: { message: CONTEXT_MESSAGE, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } } },
  },
  {
    name: 'JSON body whose choice has finish_reason "error" and an `error`',
    kind: 'openai', stream: false, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /quota/,
    response: { json: oaBody({ message: { role: 'assistant', content: '' }, finish_reason: 'error', error: { message: 'You exceeded your current quota', type: 'insufficient_quota', code: 'insufficient_quota' } }) },
  },
  {
    name: 'Anthropic JSON error body with HTTP 200',
    kind: 'anthropic', stream: false, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /rate limit/,
    response: { json: { type: 'error', error: { type: 'rate_limit_error', message: 'rate limit reached' } } },
  },
  {
    name: 'Gemini JSON error body with HTTP 200 (RESOURCE_EXHAUSTED)',
    kind: 'gemini', stream: false, status: 429, code: 'upstream_rate_limited', failsOver: true, message: /Quota exceeded/,
    response: { json: { error: { message: 'Quota exceeded for quota metric', status: 'RESOURCE_EXHAUSTED' } } },
  },
];

describe('errors inside an HTTP 200', () => {
  const up: Record<Kind | 'fb', Upstream> = {} as Record<Kind | 'fb', Upstream>;
  let gw: TestGateway;

  before(async () => {
    for (const k of ['openai', 'anthropic', 'gemini', 'fb'] as const) up[k] = await startUpstream();
    const endpoint = (provider: string) => ({ provider, upstream_model: `${provider}-model`, pricing: { prompt: 1, completion: 1 }, supported_parameters: ['max_tokens', 'temperature'] });
    const fb = endpoint('fb');
    gw = await startGateway(
      {
        providers: [
          { id: 'openai', kind: 'openai', base_url: up.openai.url, api_key: 'k' },
          { id: 'anthropic', kind: 'anthropic', base_url: up.anthropic.url, api_key: 'k' },
          { id: 'gemini', kind: 'gemini', base_url: new URL(up.gemini.url).origin, api_key: 'k' },
          { id: 'fb', kind: 'openai', base_url: up.fb.url, api_key: 'k' },
        ],
        models: (['openai', 'anthropic', 'gemini'] as const).flatMap((k) => [
          { id: `test/${k}`, context_length: 100_000, endpoints: [endpoint(k)] },
          { id: `test/${k}-fb`, context_length: 100_000, endpoints: [endpoint(k), fb] },
        ]),
      },
      { random: () => 0 },
    );
  });
  after(async () => {
    await gw.close();
    for (const u of Object.values(up)) await u.close();
  });

  const post = (model: string, stream: boolean) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });

  async function recordOf(requestId: string) {
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('request_id', '=', requestId).executeTakeFirstOrThrow();
    return { ...row, attempts: (JSON.parse(row.detail) as Json).attempts as Json[] };
  }

  for (const shape of SHAPES) {
    test(`${shape.stream ? 'stream' : 'no stream'}, ${shape.kind}: ${shape.name} → ${shape.status} ${shape.code}, recorded as an error`, async () => {
      up[shape.kind].enqueue(shape.response);
      const res = await post(`test/${shape.kind}`, shape.stream);
      assert.equal(res.status, shape.status);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      const body = (await res.json()) as Json;
      assert.deepEqual(validateErrorResponse(body), []);
      assert.equal(body.error.code, shape.code);
      assert.match(body.error.message, shape.message);
      assert.equal(body.error.param, shape.param ?? null);
      const row = await recordOf(body.error.request_id as string);
      assert.equal(row.status, 'error');
      assert.equal(row.error_code, shape.code);
      assert.equal(row.http_status, shape.status);
      assert.equal(row.completion_tokens === null || row.completion_tokens === 0, true);
    });

    test(`${shape.stream ? 'stream' : 'no stream'}, ${shape.kind}: ${shape.name}, with a fallback endpoint → ${shape.failsOver ? 'answered by the fallback' : 'not retried'}`, async () => {
      const fbBefore = up.fb.requests.length;
      up[shape.kind].enqueue(shape.response);
      if (shape.failsOver) up.fb.enqueue(shape.stream ? FALLBACK_STREAM : FALLBACK_JSON);
      const res = await post(`test/${shape.kind}-fb`, shape.stream);
      if (!shape.failsOver) {
        assert.equal(res.status, shape.status);
        assert.equal(((await res.json()) as Json).error.code, shape.code);
        assert.equal(up.fb.requests.length, fbBefore, 'a request the upstream refused is not sent to another endpoint of the model');
        return;
      }
      assert.equal(res.status, 200);
      let content: string;
      if (shape.stream) {
        const text = await res.text();
        assert.ok(text.endsWith('data: [DONE]\n\n'));
        const events = sseJsonEvents(text);
        for (const e of events) assert.deepEqual(validateChatCompletionChunk(e), []);
        assert.equal(events.filter((e) => e.error).length, 0);
        content = events.map((e) => e.choices[0]?.delta?.content ?? '').join('');
      } else {
        content = ((await res.json()) as Json).choices[0].message.content as string;
      }
      assert.equal(content, 'from fallback');
      const row = await recordOf(res.headers.get('x-request-id')!);
      assert.equal(row.status, 'success');
      assert.equal(row.provider, 'fb');
      assert.deepEqual(row.attempts.map((a) => [a.provider, a.error_code]), [[shape.kind, shape.code], ['fb', null]]);
    });
  }

  /** Content first, then the error: one error chunk, then [DONE]; no failover. */
  const AFTER_CONTENT: { name: string; kind: Kind; response: ScriptedResponse; code: string }[] = [
    { name: 'OpenAI `error` in the choice', kind: 'openai', code: 'upstream_rate_limited', response: { sse: [OA_ROLE, oaText('Hello'), oaChunk({}, 'error', { error: { message: 'rate limited', code: 'rate_limit_exceeded' } })] } },
    { name: 'OpenAI SSE event named `error`', kind: 'openai', code: 'upstream_overloaded', response: { rawChunks: [`data: ${oaText('Hello')}\n\n`, `event: error\ndata: ${ev({ error: { message: 'overloaded', type: 'overloaded_error' } })}\n\n`] } },
    { name: 'Anthropic `error` event', kind: 'anthropic', code: 'upstream_overloaded', response: { framing: 'anthropic', sse: [AN_START, AN_TEXT_START, anText('Hello'), anError('overloaded_error', 'Overloaded')] } },
    { name: 'Gemini `error` object', kind: 'gemini', code: 'upstream_error', response: { framing: 'gemini', sse: [geText('Hello'), ev({ error: { code: 500, message: 'Internal error', status: 'INTERNAL' } })] } },
  ];
  for (const c of AFTER_CONTENT) {
    test(`after content, ${c.kind}: ${c.name} → the content, one error chunk (${c.code}), [DONE]; no failover`, async () => {
      const fbBefore = up.fb.requests.length;
      up[c.kind].enqueue(c.response);
      const res = await post(`test/${c.kind}-fb`, true);
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.ok(text.endsWith('data: [DONE]\n\n'));
      const events = sseJsonEvents(text);
      assert.equal(events.map((e) => e.choices[0]?.delta?.content ?? '').join(''), 'Hello');
      const errors = events.filter((e) => e.error);
      assert.equal(errors.length, 1);
      assert.equal(events.at(-1), errors[0]);
      assert.equal(errors[0]!.error.code, c.code);
      assert.equal(errors[0]!.choices[0].finish_reason, 'error');
      assert.equal(up.fb.requests.length, fbBefore);
      const row = await recordOf(res.headers.get('x-request-id')!);
      assert.equal(row.status, 'error');
      assert.equal(row.error_code, c.code);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Per provider kind, on the setups of the provider tests (moved here from relay.test.ts,
// anthropic-errors.test.ts and gemini-errors.test.ts).

describe('OpenAI-compatible upstream: errors inside a 200 stream, before the first byte', () => {
  test('a 200 whose first event is an error: a JSON error with one endpoint', async (t) => {
    const { up, gw } = await relaySetup(t);
    up.enqueue({ sse: [JSON.stringify({ error: { message: 'overloaded', code: 529 } })] });
    const res = await relayPost(gw, streamRequest());
    const err = await checkErrorResponse(res, 503);
    assert.equal(err.code, 'upstream_overloaded');
    assert.equal(err.kind, 'retryable');
    assert.equal(err.scope, 'provider');
    assert.equal(err.type, 'server_error');
    assert.equal(err.message, 'overloaded');
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('request_id', '=', err.request_id as string).executeTakeFirstOrThrow();
    assert.equal(row.status, 'error');
    assert.equal(row.error_code, 'upstream_overloaded');
    assert.equal(row.http_status, 503);
  });

  test('a 200 whose first event is an error falls back to the second endpoint', async (t) => {
    const { up, up2, gw } = await relaySetup(t, { fallback: true });
    // OpenRouter style: a processing comment, then the error as the first event.
    up.enqueue({ rawChunks: [': OPENROUTER PROCESSING\n\n', frame(JSON.stringify({ error: { message: 'overloaded', code: 529 } })), 'data: [DONE]\n\n'] });
    up2.enqueue({ sse: textStream(['from', ' second'], [8, 2]) });
    const out = checkSuccessfulStream(await readStream(await relayPost(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['from', ' second']);
    assert.equal((up2.requests[0]!.json as Json).model, 'upstream-model-2');
    const row = await generationRow(gw, out.id);
    assert.equal(row.status, 'success');
    assert.equal(row.provider, 'up2');
    assert.equal(row.endpoint, 'up2/upstream-model-2');
    const attempts = (JSON.parse(row.detail) as Json).attempts as Json[];
    assert.equal(attempts.length, 2);
    assert.deepEqual(
      attempts.map((a) => ({ endpoint: a.endpoint, provider: a.provider, model: a.model, error_code: a.error_code })),
      [
        { endpoint: 'up/upstream-model', provider: 'up', model: 'test/model', error_code: 'upstream_overloaded' },
        { endpoint: 'up2/upstream-model-2', provider: 'up2', model: 'test/model', error_code: null },
      ],
    );
    assert.equal(attempts[1]!.status, 200);
  });
});

describe('failures after the first byte', () => {
  const contentThenReset = (): ScriptedResponse => {
    const pieces = [frame(upChunk({ role: 'assistant', content: '' })), frame(upChunk({ content: 'Hello' })), frame(upChunk({ content: ' world' }))];
    return { rawChunks: [...pieces, frame(upChunk({ content: ' never sent' }))], destroyAfterBytes: Buffer.byteLength(pieces.join('')), delayMs: 10 };
  };
  const contentThenInBandError = (): ScriptedResponse => ({
    sse: [upChunk({ role: 'assistant', content: '' }), upChunk({ content: 'Hello' }), upChunk({ content: ' world' }), JSON.stringify({ error: { message: 'model crashed', code: 500 } })],
    delayMs: 10,
  });

  test('a connection reset mid-stream ends with one error chunk, no fallback', async (t) => {
    const { up, up2, gw } = await relaySetup(t, { fallback: true });
    up.enqueue(contentThenReset());
    up2.enqueue({ sse: textStream(['must not be used'], [1, 1]) });
    const s = await readStream(await relayPost(gw, streamRequest()));
    const chunk = checkErrorChunk(s);
    assert.equal(contentOf(s.events), 'Hello world');
    assert.deepEqual(s.events.slice(1, -1).map((e) => e.choices[0].delta.content), ['Hello', ' world']);
    assert.equal(chunk.error.code, 'upstream_connection_failed');
    assert.equal(chunk.error.kind, 'retryable');
    assert.equal(chunk.error.scope, 'provider');
    assert.equal(chunk.error.type, 'server_error');
    assert.equal(chunk.error.param, null);
    assert.equal(chunk.error.message, 'other side closed');
    assert.equal(chunk.usage.total_tokens, chunk.usage.prompt_tokens + chunk.usage.completion_tokens);
    assert.ok(chunk.usage.completion_tokens > 0);
    assert.equal(up2.requests.length, 0, 'no fallback after the first byte');
    const row = await generationRow(gw, chunk.id as string);
    assert.equal(row.status, 'error');
    assert.equal(row.error_code, 'upstream_connection_failed');
    assert.equal(row.provider, 'up');
    assert.equal((JSON.parse(row.detail) as Json).attempts.length, 1);
  });

  test('an in-band error chunk mid-stream ends with one error chunk, no fallback', async (t) => {
    const { up, up2, gw } = await relaySetup(t, { fallback: true });
    up.enqueue(contentThenInBandError());
    up2.enqueue({ sse: textStream(['must not be used'], [1, 1]) });
    const s = await readStream(await relayPost(gw, streamRequest()));
    const chunk = checkErrorChunk(s);
    assert.equal(contentOf(s.events), 'Hello world');
    assert.deepEqual(chunk.error, {
      code: 'upstream_error',
      message: 'model crashed',
      kind: 'retryable',
      scope: 'provider',
      type: 'server_error',
      param: null,
      request_id: s.res.headers.get('x-request-id'),
      metadata: { provider_name: 'up', upstream_status: 500, upstream_code: 500 },
    });
    assert.equal(up2.requests.length, 0, 'no fallback after the first byte');
  });

  test('the SDK raises an APIError while iterating, after the content', async (t) => {
    const { up, gw } = await relaySetup(t, { fallback: true });
    up.enqueue(contentThenReset(), contentThenInBandError());
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    for (const expected of ['upstream_connection_failed', 'upstream_error']) {
      const stream = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], stream: true });
      let content = '';
      await assert.rejects(
        (async () => {
          for await (const c of stream) content += c.choices[0]?.delta?.content ?? '';
        })(),
        (e: unknown) => {
          assert.ok(e instanceof OpenAI.APIError, String(e));
          assert.equal(e.code, expected);
          assert.equal(e.type, 'server_error');
          return true;
        },
      );
      assert.equal(content, 'Hello world');
    }
  });
});

describe('Anthropic upstream: errors inside a 200 stream (and a 200 JSON error body)', () => {
  test('a 200 JSON error body → the mapped error', async (t) => {
    const { claude, post } = await anthropicSetup(t);
    claude.enqueue({ json: anthropicError('api_error', 'Internal server error') });
    const err = await errorOf(await post({}), 502);
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.message, 'Internal server error');
  });

  test('an error event first in the stream fails over to the next endpoint (kind openai)', async (t) => {
    const { claude, backup, gw, client } = await anthropicSetup(t);
    claude.enqueue({ sse: [START, overloaded], framing: 'anthropic' });
    backup.enqueue({
      sse: [
        ev({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-backup', choices: [{ index: 0, delta: { role: 'assistant', content: 'from backup' }, finish_reason: null }] }),
        ev({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-backup', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
        ev({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-backup', choices: [], usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } }),
      ],
    });
    // provider.order pins the endpoint order (routing is otherwise a weighted random draw).
    const params = { model: 'anthropic/claude-fallback', messages: [{ role: 'user' as const, content: 'hi' }], stream: true as const, provider: { order: ['claude', 'backup'] } };
    const stream = client.chat.completions.stream(params as OpenAI.ChatCompletionCreateParamsStreaming);
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, 'from backup');
    assert.equal(final.choices[0]!.finish_reason, 'stop');
    assert.equal(claude.requests.at(-1)!.path, '/v1/messages');
    assert.equal((backup.requests.at(-1)!.json as Json).model, 'gpt-backup');
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', final.id).executeTakeFirstOrThrow();
    assert.equal(row.provider, 'backup');
    assert.deepEqual(
      (JSON.parse(row.detail) as Json).attempts.map((a: Json) => [a.provider, a.error_code]),
      [['claude', 'upstream_overloaded'], ['backup', null]],
    );
  });

  test('an error event first in the stream with one endpoint → a JSON error', async (t) => {
    const { claude, post } = await anthropicSetup(t);
    claude.enqueue({ sse: [overloaded], framing: 'anthropic' });
    const err = await errorOf(await post({ stream: true }), 503);
    assert.equal(err.code, 'upstream_overloaded');
    assert.equal(err.message, 'Overloaded');
  });

  test('an error event after the first byte → the error chunk with finish_reason "error"', async (t) => {
    const { claude, post } = await anthropicSetup(t);
    claude.enqueue({ sse: [START, TEXT_START, textDelta('Hel'), textDelta('lo'), ev({ type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } })], framing: 'anthropic' });
    const res = await post({ stream: true });
    assert.equal(res.status, 200);
    const chunks = parseSse(await res.text());
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }]);
    assert.equal(last.error.code, 'upstream_rate_limited');
    assert.equal(last.error.message, 'slow down');
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Hello');
    for (const c of chunks.slice(0, -1)) {
      assert.deepEqual(validateChatCompletionChunk(c), []);
      assert.equal(c.choices[0].finish_reason, null);
    }
    assert.equal(chunks.filter((c) => c.error !== undefined).length, 1);
  });
});


describe('Gemini upstream: errors inside a 200 stream', () => {
  let gemini: Upstream;
  let fallback: Upstream;
  let client: OpenAI;
  let post: GeminiGateway['post'];
  let lastRecord: GeminiGateway['lastRecord'];
  let close: GeminiGateway['close'] | undefined;

  before(async () => {
    ({ gemini, fallback, client, post, lastRecord, close } = await startGeminiGateway());
  });
  after(async () => {
    await close?.();
  });

  test('an error as the first stream event fails over to the second (OpenAI-kind) endpoint', async () => {
    const geminiBefore = gemini.requests.length;
    gemini.enqueue({ sse: [JSON.stringify(gError(503, 'UNAVAILABLE', 'The model is overloaded.'))], framing: 'gemini' });
    fallback.enqueue({ sse: [openaiChunk({ role: 'assistant', content: 'from ' }), openaiChunk({ content: 'fallback' }), openaiChunk({}, 'stop')] });
    const stream = client.chat.completions.stream({ model: 'google/gemini-with-fallback', messages: [{ role: 'user', content: 'hi' }], provider: { order: ['gemini', 'fb'] } } as never);
    const final = await stream.finalChatCompletion();
    assert.equal(final.choices[0]!.message.content, 'from fallback');
    assert.equal(final.choices[0]!.finish_reason, 'stop');
    assert.equal(gemini.requests.length, geminiBefore + 1);
    assert.equal(gemini.requests.at(-1)!.path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
    assert.equal((fallback.requests.at(-1)!.json as Json).model, 'fallback-model');
    const record = await lastRecord();
    assert.equal(record.status, 'success');
    assert.equal(record.provider, 'fb');
    const attempts = (JSON.parse(record.detail) as Json).attempts as Json[];
    assert.deepEqual(attempts.map((a) => [a.provider, a.error_code]), [['gemini', 'upstream_overloaded'], ['fb', null]]);
  });

  test('an error event after the first byte ends the stream with an error chunk, finish_reason "error"', async () => {
    gemini.enqueue({ sse: [textEvent('Hello'), JSON.stringify(gError(500, 'INTERNAL', 'An internal error has occurred.'))], framing: 'gemini' });
    const r = await post({ stream: true });
    assert.equal(r.status, 200);
    const content = r.events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');
    assert.equal(content, 'Hello');
    const last = r.events.at(-1)!;
    assert.deepEqual(last.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }]);
    assert.equal(last.error.code, 'upstream_error');
    assert.equal(last.error.message, 'An internal error has occurred.');
    assert.deepEqual(last.usage, { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6, cost: 0 });

    gemini.enqueue({ sse: [textEvent('Hel')], framing: 'gemini' });
    const cut = await post({ stream: true });
    assert.equal(cut.events.at(-1)!.choices[0].finish_reason, 'error');
    assert.equal(cut.events.at(-1)!.error.code, 'upstream_connection_failed');
    assert.equal(cut.events.at(-1)!.error.message, 'the stream ended before the generation finished');

    gemini.enqueue({ sse: [textEvent('Hi', { finishReason: 'STOP' })], framing: 'gemini' });
    const ok = await post({ stream: true });
    assert.equal(ok.events.at(-2)!.choices[0].finish_reason, 'stop');
  });

  test('the SDK raises the mid-stream error', async () => {
    gemini.enqueue({ sse: [textEvent('Hello'), JSON.stringify(gError(503, 'UNAVAILABLE', 'overloaded'))], framing: 'gemini' });
    const stream = await client.chat.completions.create({ model: 'google/gemini-x', messages: [{ role: 'user', content: 'hi' }], stream: true });
    let text = '';
    await assert.rejects(
      (async () => {
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
      })(),
      (e: unknown) => e instanceof OpenAI.APIError && /overloaded/.test(e.message),
    );
    assert.equal(text, 'Hello');
  });
});
