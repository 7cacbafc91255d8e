/**
 * Failures of provider kind `anthropic`: non-2xx error bodies mapped to catalog codes, cut
 * streams, and stream edge cases of the event transform. Errors inside a 200 (a JSON error body,
 * an `error` event before the first byte → failover; after it → the stream's error chunk) are
 * tested in test/pipeline/stream-errors.test.ts, on the same setup (helpers/anthropic-gateway.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ev, START, TEXT_START, textDelta, stopBlock, messageDelta, STOP, parseSse, setup, errorOf, anthropicError } from '../helpers/anthropic-gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('Anthropic errors and stream edge cases', () => {
  test('529 overloaded_error → 503 upstream_overloaded (retryable), message kept', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ status: 529, json: anthropicError('overloaded_error', 'Overloaded') });
    assert.deepEqual(await errorOf(await post({}), 503), {
      code: 'upstream_overloaded',
      message: 'Overloaded',
      kind: 'retryable',
      scope: 'provider',
      type: 'server_error',
      param: null,
      metadata: { provider_name: 'claude', upstream_status: 529, upstream_code: 'overloaded_error' },
    });
  });

  test('401 authentication_error → 502 upstream_auth_failed', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ status: 401, json: anthropicError('authentication_error', 'invalid x-api-key') });
    assert.deepEqual(await errorOf(await post({ stream: true }), 502), {
      code: 'upstream_auth_failed',
      message: 'invalid x-api-key',
      kind: 'terminal',
      scope: 'provider',
      type: 'server_error',
      param: null,
      metadata: { provider_name: 'claude', upstream_status: 401, upstream_code: 'authentication_error' },
    });
  });

  test('400 invalid_request_error → 400 upstream_bad_request with the upstream message', async (t) => {
    const { claude, post } = await setup(t);
    const message = 'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01';
    claude.enqueue({ status: 400, json: anthropicError('invalid_request_error', message) });
    assert.deepEqual(await errorOf(await post({}), 400), {
      code: 'upstream_bad_request',
      message: `${message}`,
      kind: 'terminal',
      scope: 'provider',
      type: 'invalid_request_error',
      param: null,
      metadata: { provider_name: 'claude', upstream_status: 400, upstream_code: 'invalid_request_error' },
    });
  });

  test('400 "prompt is too long" → context_length_exceeded', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ status: 400, json: anthropicError('invalid_request_error', 'prompt is too long: 210000 tokens > 200000 maximum') });
    const err = await errorOf(await post({}), 400);
    assert.equal(err.code, 'context_length_exceeded');
    assert.equal(err.message, 'prompt is too long: 210000 tokens > 200000 maximum');
  });

  test('429 rate_limit_error → 429 upstream_rate_limited with Retry-After', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ status: 429, headers: { 'retry-after': '17' }, json: anthropicError('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit') });
    const res = await post({});
    assert.equal(res.headers.get('retry-after'), '17');
    const err = await errorOf(res, 429);
    assert.equal(err.code, 'upstream_rate_limited');
    assert.equal(err.message, 'Number of request tokens has exceeded your per-minute rate limit');
    assert.deepEqual(err.metadata, { provider_name: 'claude', upstream_status: 429, upstream_code: 'rate_limit_error' });
  });

  test('a non-JSON error page → upstream_error with the page text', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ status: 502, text: '<html><body><h1>502 Bad Gateway</h1></body></html>' });
    const err = await errorOf(await post({}), 502);
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.message, '502 Bad Gateway');
    assert.deepEqual(err.metadata, { provider_name: 'claude', upstream_status: 502 });
  });

  test('a stream cut after some text (no message_delta / message_stop) ends with the error chunk', async (t) => {
    const { claude, gw, post } = await setup(t);
    claude.enqueue({ sse: [START, TEXT_START, textDelta('partial')], framing: 'anthropic' });
    const chunks = parseSse(await (await post({ stream: true })).text());
    const last = chunks.at(-1)!;
    assert.equal(last.choices[0].finish_reason, 'error');
    assert.equal(last.error.code, 'upstream_connection_failed');
    assert.equal(last.error.message, 'the stream ended before the message finished (no message_delta or message_stop)');
    // Only the input count was reported before the cut: the gateway estimates the usage.
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', last.id as string).executeTakeFirstOrThrow();
    assert.equal(row.usage_source, 'estimated');
    assert.equal(row.status, 'error');
    assert.equal(row.error_code, 'upstream_connection_failed');
  });

  test('a stream cut before any content fails before the first byte', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ sse: [START], framing: 'anthropic' });
    const err = await errorOf(await post({ stream: true }), 502);
    assert.equal(err.code, 'upstream_connection_failed');
  });

  test('a stream without its final message_stop still finishes (message_delta seen)', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ sse: [START, TEXT_START, textDelta('done'), stopBlock(0), messageDelta('max_tokens', 3), STOP], framing: 'anthropic', endWithoutDone: true });
    const chunks = parseSse(await (await post({ stream: true })).text());
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['length']);
    assert.equal(chunks.at(-1)!.usage.completion_tokens, 3);
  });

  test('stream: dense tool indexes after text, no-argument tools end with "{}", server tools skipped', async (t) => {
    const { claude, client } = await setup(t);
    claude.enqueue({
      framing: 'anthropic',
      splitAt: 11,
      sse: [
        START,
        TEXT_START,
        textDelta('Let me check.'),
        stopBlock(0),
        ev({ type: 'content_block_start', index: 1, content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} } }),
        ev({ type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"query":"x"}' } }),
        stopBlock(1),
        ev({ type: 'content_block_start', index: 2, content_block: { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] } }),
        stopBlock(2),
        ev({ type: 'content_block_start', index: 3, content_block: { type: 'tool_use', id: 'toolu_a', name: 'get_time', input: {} } }),
        ev({ type: 'content_block_delta', index: 3, delta: { type: 'input_json_delta', partial_json: '' } }),
        stopBlock(3),
        ev({ type: 'ping' }),
        ev({ type: 'content_block_start', index: 4, content_block: { type: 'tool_use', id: 'toolu_b', name: 'get_weather', input: {} } }),
        ev({ type: 'content_block_delta', index: 4, delta: { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' } }),
        stopBlock(4),
        messageDelta('tool_use', 40),
        STOP,
      ],
    });
    const stream = client.chat.completions.stream({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }] });
    const raw: Json[] = [];
    stream.on('chunk', (c) => raw.push(c as unknown as Json));
    const final = await stream.finalChatCompletion();
    const msg = final.choices[0]!.message;
    assert.equal(msg.content, 'Let me check.');
    assert.deepEqual(
      msg.tool_calls!.map((t) => ({ id: t.id, name: t.type === 'function' ? t.function.name : '', arguments: t.type === 'function' ? t.function.arguments : '' })),
      [
        { id: 'toolu_a', name: 'get_time', arguments: '{}' },
        { id: 'toolu_b', name: 'get_weather', arguments: '{"city":"Oslo"}' },
      ],
    );
    assert.deepEqual(raw.flatMap((c) => (c.choices[0]?.delta?.tool_calls ?? []).map((t: Json) => t.index)), [0, 0, 1, 1]);
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    assert.deepEqual(raw.at(-1)!.usage, { prompt_tokens: 12, completion_tokens: 40, total_tokens: 52, cost: raw.at(-1)!.usage.cost });
  });
});
