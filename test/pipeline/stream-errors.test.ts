/**
 * Errors inside an HTTP 200 (issue 9 §4): in every shape upstreams send them — a top-level
 * `error` object in a data event, an `error` inside the choice with `finish_reason: "error"`,
 * an SSE event named `error`, Anthropic's `error` event, Gemini's `error` object — and in
 * complete JSON bodies. Before any content such an error is a failed attempt: the router fails
 * over, or, with nothing left, answers with the error mapped through the catalog (by the
 * upstream's own code when it names one) and records an error, never an empty success. After
 * content the stream ends with one error chunk, then [DONE].
 *
 * One gateway for the file (the test routing settings keep failures from tripping breakers or
 * cooldowns); a fresh set of scripted upstreams answers on port 0.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletionChunk, validateErrorResponse } from '../helpers/openapi.js';

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
        const events = text.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)) as Json);
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
      const events = text.split('\n\n').filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)) as Json);
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
