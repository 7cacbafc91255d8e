/**
 * The upstream relay survives what real servers send (issue item 6): odd SSE framing, bytes cut
 * anywhere, huge lines, missing usage, messy tool-call indexes, non-JSON errors, timeouts,
 * client disconnects and rate limits. Errors inside a 200 stream and failures after the first
 * byte are in test/pipeline/stream-errors.test.ts, on the same harness (helpers/relay-harness.ts).
 *
 * Each test starts its own fake upstream(s) and gateway. Client output is read byte by byte
 * with `fetch` and a small line-based SSE reader (every line the gateway sends must be a
 * `data: ` line), or with the official `openai` SDK where the client's view matters.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { countTokens } from 'gpt-tokenizer';
import { type ScriptedResponse } from '../helpers/replay-upstream.js';
import { upChunk, upUsage, textStream, frame, setup, HELLO, post, streamRequest, readStream, contentOf, checkSuccessfulStream, generationRow, waitForRow, checkErrorResponse, checkErrorChunk } from '../helpers/relay-harness.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any


const costPico = (prompt: number, completion: number): number => prompt * 1_000_000 + completion * 2_000_000;

// ---------------------------------------------------------------------------------------------

describe('SSE framing from upstreams', () => {
  test('comment lines and keep-alives between events are skipped, never relayed', async (t) => {
    const { up, gw } = await setup(t);
    const [role, a, b, fin, usage] = textStream(['Hel', 'lo'], [9, 2]);
    up.enqueue({
      rawChunks: [': keep-alive\n\n', frame(role!), ': OPENROUTER PROCESSING\n\n', frame(a!), ': keep-alive\n\n', ': OPENROUTER PROCESSING\n\n', frame(b!), frame(fin!), ': keep-alive\n\n', frame(usage!), 'data: [DONE]\n\n'],
    });
    const s = await readStream(await post(gw, streamRequest()));
    assert.ok(!s.text.includes('keep-alive') && !s.text.includes('OPENROUTER'), 'no comment text reaches the client');
    assert.ok(!/^:/m.test(s.text), 'no comment line');
    const out = checkSuccessfulStream(s);
    assert.deepEqual(out.deltas, ['Hel', 'lo']);
    assert.equal(out.finish, 'stop');
    assert.deepEqual(out.usage, { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, cost: 0.000013 });
    assert.equal(s.events.length, 5);
  });

  test('CRLF framing (data: …\\r\\n\\r\\n)', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ rawChunks: [...textStream(['Hello', ', ', 'CRLF'], [5, 3]).map((p) => `data: ${p}\r\n\r\n`), 'data: [DONE]\r\n\r\n'] });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['Hello', ', ', 'CRLF']);
    assert.deepEqual(out.usage, { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, cost: 0.000011 });
  });

  test('several events in one read', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ rawChunks: [[...textStream(['one', ' two', ' three'], [4, 3]).map(frame), 'data: [DONE]\n\n'].join('')] });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['one', ' two', ' three']);
    assert.deepEqual(out.usage, { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7, cost: 0.00001 });
  });

  test('one event across many reads (1-byte pieces)', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ sse: textStream(['split', ' into', ' bytes'], [6, 3]), splitAt: 1 });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['split', ' into', ' bytes']);
    assert.deepEqual(out.usage, { prompt_tokens: 6, completion_tokens: 3, total_tokens: 9, cost: 0.000012 });
  });

  test('UTF-8 characters split across reads arrive intact', async (t) => {
    const { up, gw } = await setup(t);
    const pieces = ['hé', 'llo €', '😀 世界'];
    const script: ScriptedResponse = { sse: textStream(pieces, [3, 6]), delayMs: 5 };
    // Cut inside every multi-byte character: after its first byte (and after the 2nd for 😀).
    const body = Buffer.concat(textStream(pieces, [3, 6]).map((p) => Buffer.from(frame(p))));
    const cuts: number[] = [];
    for (const ch of ['é', '€', '😀', '世', '界']) {
      const at = body.indexOf(Buffer.from(ch, 'utf8'));
      assert.ok(at > 0);
      cuts.push(at + 1);
      if (ch === '😀') cuts.push(at + 2);
    }
    script.splitAt = cuts;
    up.enqueue(script);
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, pieces);
    assert.equal(out.deltas.join(''), 'héllo €😀 世界');
    assert.ok(!out.deltas.join('').includes('\uFFFD'));
  });

  test('a single 1 MB line is relayed intact', async (t) => {
    const { up, gw } = await setup(t);
    const unit = 'abcdefghij0123456789ABCDEFGHIJ-é€😀'; // 1-, 2-, 3- and 4-byte characters in UTF-8
    assert.equal(unit.length, 35);
    let big = unit.repeat(Math.ceil(1_000_000 / unit.length)).slice(0, 999_990);
    big += 'THE-END!!!';
    assert.equal(big.length, 1_000_000);
    up.enqueue({ sse: textStream([big], [3, 250_000]), splitAt: 65_536 });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.equal(out.deltas.length, 1);
    const got = out.deltas[0]!;
    assert.equal(got.length, 1_000_000);
    assert.equal(got.slice(0, 35), unit);
    assert.equal(got.slice(500_004, 500_040), big.slice(500_004, 500_040));
    assert.equal(got.slice(-10), 'THE-END!!!');
    assert.ok(got === big, 'the whole line is identical');
    assert.equal(out.usage.completion_tokens, 250_000);
  });

  test('`data:` without a space', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ rawChunks: [...textStream(['no', ' space'], [2, 2]).map((p) => `data:${p}\n\n`), 'data:[DONE]\n\n'] });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['no', ' space']);
    assert.deepEqual(out.usage, { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4, cost: 0.000006 });
  });
});

describe('usage', () => {
  test('a stream without a usage chunk still ends with usage, estimated and recorded as such', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ sse: textStream(['The quick brown fox', ' jumps over the lazy dog.']) });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.equal(out.deltas.join(''), 'The quick brown fox jumps over the lazy dog.');
    const u = out.usage;
    // Estimated with the o200k tokenizer: the completion text's tokens; the prompt's tokens plus
    // 3 per request and 3 per message ("hi" is 1 token).
    assert.deepEqual(u, { prompt_tokens: 7, completion_tokens: countTokens('The quick brown fox jumps over the lazy dog.'), total_tokens: 7 + 10, cost: 0.000027 });
    assert.equal(u.completion_tokens, 10);
    const row = await generationRow(gw, out.id);
    assert.equal(row.status, 'success');
    assert.equal(row.usage_source, 'estimated');
    assert.equal(row.prompt_tokens, u.prompt_tokens);
    assert.equal(row.completion_tokens, u.completion_tokens);
    assert.ok(row.completion_tokens! > 0);
    assert.equal(Number(row.cost_pico), costPico(u.prompt_tokens, u.completion_tokens));
    assert.equal(u.cost, costPico(u.prompt_tokens, u.completion_tokens) / 1e12);
  });

  test('upstream usage is passed on exactly and recorded as upstream', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ sse: textStream(['counted'], [11, 7]) });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, cost: 0.000025 });
    const row = await generationRow(gw, out.id);
    assert.equal(row.usage_source, 'upstream');
    assert.equal(row.prompt_tokens, 11);
    assert.equal(row.completion_tokens, 7);
    assert.equal(Number(row.cost_pico), 25_000_000);
    assert.equal(row.finish_reason, 'stop');
    assert.equal(row.status, 'success');
  });
});

describe('tool-call indexes', () => {
  /** Collect client tool-call deltas and check the dense, OpenAI-shaped sequence. */
  async function runTools(t: TestContext, toolDeltas: Json[][]): Promise<Json[]> {
    const { up, gw } = await setup(t);
    up.enqueue({
      sse: [upChunk({ role: 'assistant', content: null }), ...toolDeltas.map((tc) => upChunk({ tool_calls: tc })), upChunk({}, 'tool_calls'), upUsage(20, 10)],
      splitAt: 23,
    });
    const s = await readStream(await post(gw, streamRequest()));
    const out = checkSuccessfulStream(s);
    assert.equal(out.finish, 'tool_calls');
    return s.events.flatMap((e) => (e.choices?.[0]?.delta?.tool_calls ?? []) as Json[]);
  }

  /** Fold client deltas; check each call opens with id, type, name and arguments ''. */
  function fold(deltas: Json[]): { id: string; name: string; arguments: string }[] {
    const calls: { id: string; name: string; arguments: string }[] = [];
    for (const d of deltas) {
      if (calls[d.index] === undefined) {
        assert.equal(d.index, calls.length, 'indexes are dense and in order');
        assert.equal(typeof d.id, 'string');
        assert.equal(d.type, 'function');
        assert.equal(d.function.arguments, '');
        assert.deepEqual(Object.keys(d).sort(), ['function', 'id', 'index', 'type']);
        calls[d.index] = { id: d.id, name: d.function.name, arguments: '' };
      } else {
        assert.deepEqual(Object.keys(d).sort(), ['function', 'index']);
        assert.deepEqual(Object.keys(d.function), ['arguments']);
        calls[d.index]!.arguments += d.function.arguments;
      }
    }
    return calls;
  }

  test('deltas with no `index` at all', async (t) => {
    const deltas = await runTools(t, [
      [{ id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }],
      [{ function: { arguments: '{"city":' } }],
      [{ function: { arguments: '"Paris"}' } }],
      [{ id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"CET"}' } }],
    ]);
    assert.deepEqual(fold(deltas), [
      { id: 'call_a', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'call_b', name: 'get_time', arguments: '{"tz":"CET"}' },
    ]);
    assert.deepEqual(deltas.map((d) => d.index), [0, 0, 0, 1, 1]);
  });

  test('sparse indexes 3 and 7 become 0 and 1', async (t) => {
    const deltas = await runTools(t, [
      [{ index: 3, id: 'call_x', type: 'function', function: { name: 'search', arguments: '{"q":' } }],
      [{ index: 7, id: 'call_y', type: 'function', function: { name: 'fetch_url', arguments: '' } }],
      [{ index: 3, function: { arguments: '"cats"}' } }],
      [{ index: 7, function: { arguments: '{"url":"https://x.test/"}' } }],
    ]);
    assert.deepEqual(fold(deltas), [
      { id: 'call_x', name: 'search', arguments: '{"q":"cats"}' },
      { id: 'call_y', name: 'fetch_url', arguments: '{"url":"https://x.test/"}' },
    ]);
    assert.deepEqual(deltas.map((d) => d.index), [0, 0, 1, 0, 1]);
  });

  test('two calls at the same index with different ids (Ollama) are two calls', async (t) => {
    const deltas = await runTools(t, [
      [{ index: 0, id: 'call_1', type: 'function', function: { name: 'add', arguments: '{"a":1,"b":2}' } }],
      [{ index: 0, id: 'call_2', type: 'function', function: { name: 'mul', arguments: '{"a":3,"b":4}' } }],
    ]);
    assert.deepEqual(fold(deltas), [
      { id: 'call_1', name: 'add', arguments: '{"a":1,"b":2}' },
      { id: 'call_2', name: 'mul', arguments: '{"a":3,"b":4}' },
    ]);
    assert.deepEqual(deltas.map((d) => d.index), [0, 0, 1, 1]);
  });
});

describe('upstream errors before the first byte', () => {
  test('non-JSON error bodies: HTML 502, plain-text 400, plain-text 503', async (t) => {
    const { up, gw } = await setup(t);
    const html = '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n';
    up.enqueue({ status: 502, text: html, headers: { 'content-type': 'text/html' } });
    const e502 = await checkErrorResponse(await post(gw, streamRequest()), 502);
    assert.deepEqual(e502, {
      code: 'upstream_error',
      message: '502 Bad Gateway 502 Bad Gateway nginx/1.25.3',
      kind: 'retryable',
      scope: 'provider',
      type: 'server_error',
      param: null,
      request_id: e502.request_id,
      metadata: { provider_name: 'up', upstream_status: 502 },
    });

    up.enqueue({ status: 400, text: 'invalid parameter: temperature must be <= 1 for this model' });
    const e400 = await checkErrorResponse(await post(gw, streamRequest({ temperature: 1.5 })), 400);
    assert.deepEqual(e400, {
      code: 'upstream_bad_request',
      message: 'invalid parameter: temperature must be <= 1 for this model',
      kind: 'terminal',
      scope: 'provider',
      type: 'invalid_request_error',
      param: null,
      request_id: e400.request_id,
      metadata: { provider_name: 'up', upstream_status: 400 },
    });

    up.enqueue({ status: 503, text: 'Service Unavailable' });
    const e503 = await checkErrorResponse(await post(gw, { model: 'test/model', messages: HELLO }), 503);
    assert.equal(e503.code, 'upstream_overloaded');
    assert.equal(e503.kind, 'retryable');
    assert.equal(e503.message, 'Service Unavailable');
    assert.equal(up.requests.length, 3);
  });

  test('upstream 429 with Retry-After: 7', async (t) => {
    const { up, gw } = await setup(t);
    const rate = { status: 429, headers: { 'retry-after': '7' }, json: { error: { message: 'Rate limit reached for requests', type: 'rate_limit_error', code: 'rate_limit_exceeded' } } };
    up.enqueue(rate);
    const res = await post(gw, streamRequest());
    assert.equal(res.headers.get('retry-after'), '7');
    const err = await checkErrorResponse(res, 429);
    assert.deepEqual(err, {
      code: 'upstream_rate_limited',
      message: 'Rate limit reached for requests',
      kind: 'retryable',
      scope: 'provider',
      type: 'rate_limit_error',
      param: null,
      request_id: err.request_id,
      metadata: { provider_name: 'up', upstream_status: 429, upstream_code: 'rate_limit_exceeded' },
    });

    up.enqueue(rate);
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }], stream: true }),
      (e: unknown) => {
        assert.ok(e instanceof OpenAI.RateLimitError);
        assert.equal(e.status, 429);
        assert.equal(e.code, 'upstream_rate_limited');
        assert.equal(e.headers.get('retry-after'), '7');
        return true;
      },
    );
    assert.equal(up.requests.length, 2);
  });
});

describe('timeouts', () => {
  const FIRST_TOKEN_MESSAGES = ['no first token within 300 ms', 'no response within the first-token timeout'];

  test('first-token timeout: no headers in time → 504 upstream_timeout', async (t) => {
    const { up, gw } = await setup(t, { timeouts: { first_token_ms: 300, idle_ms: 1000 } });
    up.enqueue({ sse: textStream(['late']), delayBeforeHeadersMs: 1500 });
    const started = Date.now();
    const err = await checkErrorResponse(await post(gw, streamRequest()), 504);
    assert.ok(Date.now() - started < 1200, 'gave up at the first-token timeout');
    assert.equal(err.code, 'upstream_timeout');
    assert.equal(err.kind, 'retryable');
    assert.equal(err.type, 'timeout_error');
    assert.ok(FIRST_TOKEN_MESSAGES.includes(err.message as string), err.message as string);
  });

  test('first-token timeout: headers then silence → 504 upstream_timeout', async (t) => {
    const { up, gw } = await setup(t, { timeouts: { first_token_ms: 300, idle_ms: 1500 } });
    // A keep-alive comment and a role-only chunk are not a first token.
    up.enqueue({ rawChunks: [': keep-alive\n\n' + frame(upChunk({ role: 'assistant', content: '' })), frame(upChunk({ content: 'late' }))], delayMs: 1200 });
    const err = await checkErrorResponse(await post(gw, streamRequest()), 504);
    assert.equal(err.code, 'upstream_timeout');
    assert.equal(err.message, 'no first token within 300 ms');
    assert.equal((err.metadata as { provider_name?: string }).provider_name, 'up');
  });

  test('first-token timeout with a second endpoint falls back', async (t) => {
    const { up, up2, gw } = await setup(t, { fallback: true, timeouts: { first_token_ms: 300, idle_ms: 1000 } });
    up.enqueue({ sse: textStream(['late']), delayBeforeHeadersMs: 1500 });
    up2.enqueue({ sse: textStream(['on time'], [3, 2]) });
    const out = checkSuccessfulStream(await readStream(await post(gw, streamRequest())));
    assert.deepEqual(out.deltas, ['on time']);
    const row = await generationRow(gw, out.id);
    const attempts = (JSON.parse(row.detail) as Json).attempts as Json[];
    assert.deepEqual(
      attempts.map((a) => [a.endpoint, a.status, a.error_code]),
      [
        ['up/upstream-model', null, 'upstream_timeout'],
        ['up2/upstream-model-2', 200, null],
      ],
    );
  });

  test('idle timeout mid-stream → error chunk upstream_timeout', async (t) => {
    // undici runs body timeouts on 1 s-resolution timers: 300 ms fires after about 1 s, so the
    // upstream stays silent for 1.9 s.
    const { up, gw } = await setup(t, { timeouts: { first_token_ms: 1000, idle_ms: 300 } });
    up.enqueue({ rawChunks: [frame(upChunk({ role: 'assistant', content: '' })) + frame(upChunk({ content: 'Hi' })), frame(upChunk({ content: ' there' }))], delayMs: 1900 });
    const s = await readStream(await post(gw, streamRequest()));
    const chunk = checkErrorChunk(s);
    assert.equal(contentOf(s.events), 'Hi');
    assert.equal(chunk.error.code, 'upstream_timeout');
    assert.equal(chunk.error.type, 'timeout_error');
    assert.equal(chunk.error.message, 'the response went silent longer than the idle timeout');
  });
});

describe('client disconnect', () => {
  test('aborting mid-stream aborts the upstream and records a cancelled generation', async (t) => {
    const { up, gw } = await setup(t);
    up.enqueue({ sse: textStream(['Hello', ' there', ' world', ' again'], [5, 4]), delayMs: 300 });
    const ctrl = new AbortController();
    const res = await post(gw, streamRequest(), { signal: ctrl.signal });
    assert.equal(res.status, 200);
    const id = res.headers.get('x-op-generation-id')!;
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"content":"Hello"')) {
      const { value, done } = await reader.read();
      assert.equal(done, false, 'stream ended before the first content');
      text += decoder.decode(value, { stream: true });
    }
    ctrl.abort();
    await reader.cancel().catch(() => undefined);
    await up.waitForAbort(2000);
    assert.equal(up.connectionsAborted, 1);
    const row = await waitForRow(gw, id);
    assert.equal(row.status, 'cancelled');
    assert.equal(row.cancelled, 1);
    assert.equal(row.error_code, 'client_closed_request');
    assert.equal(row.http_status, 499);
    // What was seen before the abort: "Hello" (1 token, estimated; the upstream's usage never came).
    assert.notEqual(row.completion_tokens, null);
    assert.equal(row.completion_tokens, 1);
    assert.equal(row.prompt_tokens, 7);
    assert.equal(row.usage_source, 'estimated');
    assert.equal(row.provider, 'up');
  });
});
