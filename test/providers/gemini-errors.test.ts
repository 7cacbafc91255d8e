/**
 * Gemini failures through the gateway: error bodies (`{error: {code, message, status}}`) mapped
 * to the catalog, a blocked prompt (HTTP 200, no candidates). Errors inside a 200 stream (before
 * the first byte: failover to the OpenAI-kind endpoint; after it: one error chunk) are tested in
 * test/pipeline/stream-errors.test.ts, on the same gateway (helpers/gemini-gateway.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { fixturesAvailable, loadJson, type Upstream } from '../helpers/replay-upstream.js';
import { gError, startGeminiGateway, type GeminiGateway } from '../helpers/gemini-gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const noFixtures = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';
describe('Gemini errors through the gateway', () => {
  let gemini: Upstream;
  let client: OpenAI;
  let post: GeminiGateway['post'];
  let lastRecord: GeminiGateway['lastRecord'];
  let close: GeminiGateway['close'] | undefined;

  before(async () => {
    ({ gemini, client, post, lastRecord, close } = await startGeminiGateway());
  });
  after(async () => {
    await close?.();
  });

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

});
