/**
 * Gemini failures through the gateway: error bodies (`{error: {code, message, status}}`) mapped
 * to the catalog, a blocked prompt (HTTP 200, no candidates), errors inside a 200 stream before
 * the first byte (the router fails over to a second, OpenAI-kind endpoint) and after it (the
 * stream ends with an error chunk and finish_reason "error").
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { fixturesAvailable, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noFixtures = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';
const SUPPORTED = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice'];

const gError = (code: number, status: string, message: string, details?: Json[]) => ({ error: { code, message, status, ...(details ? { details } : {}) } });
const textEvent = (text: string, extra: Json = {}) => JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...extra }], usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 } });
const openaiChunk = (delta: Json, finish: string | null = null) =>
  JSON.stringify({ id: 'o-1', object: 'chat.completion.chunk', created: 1, model: 'fallback-model', choices: [{ index: 0, delta, finish_reason: finish }] });

/** Parse an SSE body into the JSON of each `data:` event (without [DONE]). */
function events(text: string): Json[] {
  return text
    .split('\n\n')
    .map((e) => e.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n'))
    .filter((d) => d !== '' && d !== '[DONE]')
    .map((d) => JSON.parse(d) as Json);
}

describe('Gemini errors through the gateway', () => {
  let gemini: Upstream;
  let fallback: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    gemini = await startUpstream();
    fallback = await startUpstream();
    gw = await startGateway({
      providers: [
        { id: 'gemini', kind: 'gemini', base_url: new URL(gemini.url).origin, api_key: 'k' },
        { id: 'fb', kind: 'openai', base_url: fallback.url, api_key: 'sk-fb' },
      ],
      models: [
        { id: 'google/gemini-x', context_length: 100_000, endpoints: [{ provider: 'gemini', upstream_model: 'gemini-x', supported_parameters: SUPPORTED }] },
        {
          id: 'google/gemini-with-fallback',
          context_length: 100_000,
          endpoints: [
            { provider: 'gemini', upstream_model: 'gemini-x', supported_parameters: SUPPORTED },
            { provider: 'fb', upstream_model: 'fallback-model', supported_parameters: SUPPORTED },
          ],
        },
      ],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await gemini?.close();
    await fallback?.close();
  });

  /** POST a chat request; return status, headers and the parsed body (JSON, or SSE events). */
  async function post(body: Json): Promise<{ status: number; headers: Headers; json: Json; events: Json[] }> {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'google/gemini-x', messages: [{ role: 'user', content: 'hi' }], ...body }),
    });
    const text = await res.text();
    const isSse = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
    return { status: res.status, headers: res.headers, json: isSse ? {} : (JSON.parse(text) as Json), events: isSse ? events(text) : [] };
  }

  async function lastRecord(): Promise<Json> {
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().execute();
    return rows.at(-1) as Json;
  }

  test('an invalid API key (HTTP 400 INVALID_ARGUMENT) is upstream_auth_failed', async () => {
    const bodies = [
      gError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }]),
      gError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.'),
    ];
    for (const body of bodies) {
      gemini.enqueue({ status: 400, json: body });
      const r = await post({});
      assert.equal(r.status, 502);
      assert.equal(r.json.error.code, 'upstream_auth_failed');
      assert.equal(r.json.error.type, 'server_error');
      assert.equal(r.json.error.message, 'API key not valid. Please pass a valid API key.');
      assert.equal(r.json.error.metadata.upstream_status, 400);
      assert.equal(r.json.error.metadata.upstream_code, body.error.details ? 'API_KEY_INVALID' : 'INVALID_ARGUMENT');
    }
    gemini.enqueue({ status: 403, json: gError(403, 'PERMISSION_DENIED', 'Permission denied: Consumer has been suspended.') });
    assert.equal((await post({})).json.error.code, 'upstream_auth_failed');
  });

  test('429 RESOURCE_EXHAUSTED (the recorded body) is upstream_rate_limited with Retry-After from RetryInfo', { skip: noFixtures }, async () => {
    const recorded = loadJson('google/google-429-retry-info.json') as Json;
    gemini.enqueue({ status: 429, json: recorded });
    const r = await post({});
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, 'upstream_rate_limited');
    assert.equal(r.json.error.message, `${recorded.error.message}`);
    assert.equal(r.json.error.metadata.upstream_code, 'RESOURCE_EXHAUSTED');
    assert.equal(r.headers.get('retry-after'), '35'); // retryDelay "34.4s", rounded up
  });

  test('429 with a Retry-After header; 503, 500, 504 and other 400s by status', async () => {
    gemini.enqueue({ status: 429, headers: { 'retry-after': '7' }, json: gError(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check quota).') });
    const limited = await post({});
    assert.equal(limited.json.error.code, 'upstream_rate_limited');
    assert.equal(limited.headers.get('retry-after'), '7');

    const cases: [number, string, string, number, string][] = [
      [503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.', 503, 'upstream_overloaded'],
      [500, 'INTERNAL', 'An internal error has occurred.', 502, 'upstream_error'],
      [504, 'DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.', 504, 'upstream_timeout'],
      [400, 'INVALID_ARGUMENT', 'Please ensure that multiturn requests alternate between user and model.', 400, 'upstream_bad_request'],
      [400, 'FAILED_PRECONDITION', 'User location is not supported for the API use.', 400, 'upstream_bad_request'],
      [400, 'INVALID_ARGUMENT', 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).', 400, 'context_length_exceeded'],
    ];
    for (const [status, canonical, message, clientStatus, code] of cases) {
      gemini.enqueue({ status, json: gError(status, canonical, message) });
      const r = await post({});
      assert.equal(r.status, clientStatus, message);
      assert.equal(r.json.error.code, code, message);
      assert.equal(r.json.error.message, `${message}`);
      assert.equal(r.json.error.metadata.upstream_status, status);
      assert.equal(r.json.error.metadata.upstream_code, canonical);
    }
    gemini.enqueue({ status: 502, text: '<html><body>Bad Gateway</body></html>', headers: { 'content-type': 'text/html' } });
    const html = await post({});
    assert.equal(html.json.error.code, 'upstream_error');
    assert.equal(html.json.error.message, 'Bad Gateway');
  });

  test('the SDK sees typed errors', async () => {
    gemini.enqueue({ status: 503, json: gError(503, 'UNAVAILABLE', 'The model is overloaded.') });
    await assert.rejects(
      client.chat.completions.create({ model: 'google/gemini-x', messages: [{ role: 'user', content: 'hi' }] }),
      (e: unknown) => e instanceof OpenAI.InternalServerError && e.status === 503 && e.code === 'upstream_overloaded' && e.message.includes('The model is overloaded.'),
    );
    gemini.enqueue({ status: 400, json: gError(400, 'INVALID_ARGUMENT', 'Invalid JSON payload received.') });
    await assert.rejects(
      client.chat.completions.create({ model: 'google/gemini-x', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === 'upstream_bad_request',
    );
  });

  test('a blocked prompt (200, no candidates, promptFeedback.blockReason) is a 400 upstream_bad_request, streamed or not', async () => {
    const blocked = { promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 }, modelVersion: 'gemini-x' };
    gemini.enqueue({ json: blocked });
    const complete = await post({});
    assert.equal(complete.status, 400);
    assert.equal(complete.json.error.code, 'upstream_bad_request');
    assert.equal(complete.json.error.message, 'the prompt was blocked by the provider (blockReason PROHIBITED_CONTENT)');
    assert.equal(complete.json.error.metadata.block_reason, 'PROHIBITED_CONTENT');

    gemini.enqueue({ sse: [JSON.stringify({ ...blocked, promptFeedback: { blockReason: 'SAFETY', blockReasonMessage: 'unsafe' } })], framing: 'gemini' });
    const streamed = await post({ stream: true });
    assert.equal(streamed.status, 400);
    assert.equal(streamed.json.error.code, 'upstream_bad_request');
    assert.equal(streamed.json.error.message, 'the prompt was blocked by the provider (blockReason SAFETY): unsafe');
    const record = await lastRecord();
    assert.equal(record.status, 'error');
    assert.equal(record.error_code, 'upstream_bad_request');
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
