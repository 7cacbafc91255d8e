/**
 * Failures of provider kind `anthropic`: non-2xx error bodies mapped to catalog codes, errors
 * inside a 200 stream (before the first byte → failover to the next endpoint; after it → the
 * stream's error chunk), cut streams, and stream edge cases of the event transform.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletionChunk, validateErrorResponse } from '../helpers/openapi.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Model `anthropic/claude` served by provider `claude` (kind anthropic) only; model
 * `anthropic/claude-fallback` by `claude` first, then provider `backup` (kind openai).
 */
function config(claudeUrl: string, backupUrl: string) {
  const claude = { provider: 'claude', upstream_model: 'claude-sonnet-4-5', pricing: { prompt: 3, completion: 15 }, supported_parameters: ['tools', 'tool_choice', 'temperature', 'max_tokens'] };
  return {
    providers: [
      { id: 'claude', kind: 'anthropic', base_url: claudeUrl, api_key: 'k' },
      { id: 'backup', kind: 'openai', base_url: backupUrl, api_key: 'sk-backup' },
    ],
    models: [
      { id: 'anthropic/claude', context_length: 200000, endpoints: [claude] },
      { id: 'anthropic/claude-fallback', context_length: 200000, endpoints: [claude, { provider: 'backup', upstream_model: 'gpt-backup', supported_parameters: ['max_tokens'] }] },
    ],
  };
}

const ev = (e: Json): string => JSON.stringify(e);
const START = ev({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } });
const TEXT_START = ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
const textDelta = (t: string, index = 0): string => ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
const stopBlock = (index: number): string => ev({ type: 'content_block_stop', index });
const messageDelta = (stop: string, output: number): string => ev({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: output } });
const STOP = ev({ type: 'message_stop' });
const overloaded = ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });

function parseSse(text: string): Json[] {
  assert.ok(text.endsWith('data: [DONE]\n\n'), text.slice(-200));
  return text
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => JSON.parse(b.slice('data: '.length)) as Json);
}

interface Setup {
  claude: Upstream;
  backup: Upstream;
  gw: TestGateway;
  client: OpenAI;
  post(body: Json): Promise<Response>;
}

/**
 * A fresh gateway and upstreams per test: failures feed the router's endpoint health (circuit
 * breaker, Retry-After cooldown), which must not leak from one test into the next.
 */
async function setup(t: TestContext): Promise<Setup> {
  const claude = await startUpstream();
  const backup = await startUpstream();
  const gw = await startGateway(config(claude.url, backup.url));
  const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  t.after(async () => {
    assert.equal(claude.pendingCount(), 0, 'every scripted claude response was used');
    assert.equal(backup.pendingCount(), 0, 'every scripted backup response was used');
    await gw.close();
    await claude.close();
    await backup.close();
  });
  const post = (body: Json): Promise<Response> =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }], ...body }),
    });
  return { claude, backup, gw, client, post };
}

describe('Anthropic errors and stream edge cases', () => {
  async function errorOf(res: Response, status: number): Promise<Json> {
    assert.equal(res.status, status);
    const body = (await res.json()) as Json;
    assert.deepEqual(validateErrorResponse(body), []);
    const { request_id: _r, ...error } = body.error as Json;
    return error;
  }

  const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message }, request_id: 'req_011' });

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

  test('a 200 JSON error body → the mapped error', async (t) => {
    const { claude, post } = await setup(t);
    claude.enqueue({ json: anthropicError('api_error', 'Internal server error') });
    const err = await errorOf(await post({}), 502);
    assert.equal(err.code, 'upstream_error');
    assert.equal(err.message, 'Internal server error');
  });

  test('an error event first in the stream fails over to the next endpoint (kind openai)', async (t) => {
    const { claude, backup, gw, client } = await setup(t);
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
    const { claude, post } = await setup(t);
    claude.enqueue({ sse: [overloaded], framing: 'anthropic' });
    const err = await errorOf(await post({ stream: true }), 503);
    assert.equal(err.code, 'upstream_overloaded');
    assert.equal(err.message, 'Overloaded');
  });

  test('an error event after the first byte → the error chunk with finish_reason "error"', async (t) => {
    const { claude, post } = await setup(t);
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
