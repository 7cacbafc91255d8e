/**
 * The harness of the OpenAI-compatible relay tests: upstream chunk builders, a fresh gateway per
 * test with an optional second endpoint and provider timeouts, and a strict client-side SSE
 * reader with the checks every stream, error chunk and JSON error must pass. Shared by
 * test/pipeline/relay.test.ts and test/pipeline/stream-errors.test.ts.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { startUpstream, type Upstream } from './replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from './gateway.js';
import { validateChatCompletionChunk, validateErrorResponse } from './openapi.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

// ---------------------------------------------------------------------------------------------
// Upstream chunks

/** The `created` of every upstream chunk (seconds). */
export const CREATED = 1_700_000_000;

/** An upstream `chat.completion.chunk` with one choice: `delta` and `finish_reason`. */
export function upChunk(delta: Json, finish: string | null = null): string {
  return JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: CREATED, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }] });
}

/** An upstream usage chunk (no choices) with these prompt and completion token counts. */
export function upUsage(prompt: number, completion: number): string {
  return JSON.stringify({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: CREATED, model: 'upstream-model', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
}

/** A plain OpenAI text stream: role, one chunk per piece, finish `stop`, optional usage. */
export function textStream(pieces: string[], usage?: [number, number]): string[] {
  return [upChunk({ role: 'assistant', content: '' }), ...pieces.map((p) => upChunk({ content: p })), upChunk({}, 'stop'), ...(usage ? [upUsage(usage[0], usage[1])] : [])];
}

/** `data: <payload>\n\n` per payload (what `sse` framing writes), for hand-made raw bodies. */
export const frame = (payload: string): string => `data: ${payload}\n\n`;

// ---------------------------------------------------------------------------------------------
// Setup

/** The upstreams and gateway of one test: `up` first, `up2` the fallback endpoint's. */
export interface Setup {
  up: Upstream;
  up2: Upstream;
  gw: TestGateway;
}

/** Provider `timeouts` of the gateway under test, milliseconds. */
export type Timeouts = Partial<{ first_token_ms: number; idle_ms: number; total_ms: number; connect_ms: number }>;

/**
 * A fresh gateway. With `fallback`, model `test/model` has a second endpoint on provider
 * `up2` (upstream model `upstream-model-2`) on a second upstream, tried after `up` (same
 * prices; the routing draw is pinned so the config order holds).
 */
export async function setup(t: TestContext, opts: { fallback?: boolean; timeouts?: Timeouts } = {}): Promise<Setup> {
  const up = await startUpstream();
  const up2 = await startUpstream();
  const base = oneModelConfig(up.url, { provider: opts.timeouts ? { timeouts: opts.timeouts } : {} });
  if (opts.fallback) {
    base.providers.push({ id: 'up2', kind: 'openai', base_url: up2.url, api_key: 'sk-second' });
    base.models[0]!.endpoints.push({ ...base.models[0]!.endpoints[0]!, provider: 'up2', upstream_model: 'upstream-model-2' });
  }
  // A draw of 0 keeps the config order, so `up` is always tried first.
  const gw = await startGateway(base, { random: () => 0 });
  t.after(async () => {
    await gw.close();
    await up.close();
    await up2.close();
  });
  return { up, up2, gw };
}

/** The messages of every request. */
export const HELLO = [{ role: 'user', content: 'hi' }];

/** POST `body` to the gateway's chat completions with the admin key. */
export function post(gw: TestGateway, body: Json, init: RequestInit = {}): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...init,
  });
}

/** A streamed request for `test/model`, with `extra` fields over it. */
export const streamRequest = (extra: Json = {}): Json => ({ model: 'test/model', messages: HELLO, stream: true, ...extra });

// ---------------------------------------------------------------------------------------------
// Client-side SSE reading

export interface ClientStream {
  res: Response;
  /** The raw body text. */
  text: string;
  /** Parsed JSON events, without the final `[DONE]`. */
  events: Json[];
}

/**
 * Parse a gateway SSE body strictly: events separated by a blank line, every line a
 * `data: ` line (no comments, no other fields), the last event `data: [DONE]`.
 */
export function parseClientSse(text: string): Json[] {
  assert.ok(text.endsWith('data: [DONE]\n\n'), `stream does not end with [DONE]: …${JSON.stringify(text.slice(-200))}`);
  const blocks = text.split('\n\n');
  assert.equal(blocks.pop(), '');
  const data: string[] = [];
  for (const block of blocks) {
    const lines = block.split('\n');
    assert.equal(lines.length, 1, `one line per event: ${JSON.stringify(block.slice(0, 200))}`);
    assert.ok(lines[0]!.startsWith('data: '), `not a data line: ${JSON.stringify(lines[0]!.slice(0, 200))}`);
    data.push(lines[0]!.slice('data: '.length));
  }
  assert.equal(data.pop(), '[DONE]');
  assert.ok(!data.includes('[DONE]'), '[DONE] appears once');
  return data.map((d) => JSON.parse(d) as Json);
}

/** Read a gateway response to its end and parse it strictly ({@link parseClientSse}). */
export async function readStream(res: Response): Promise<ClientStream> {
  const text = await res.text();
  return { res, text, events: parseClientSse(text) };
}

/** The content deltas of a stream's events, joined. */
export const contentOf = (events: Json[]): string => events.map((e) => e.choices?.[0]?.delta?.content ?? '').join('');

/**
 * Check a stream that succeeded: 200, SSE headers, every chunk a valid `chat.completion.chunk`
 * of this generation, the role first, one finish chunk, then one usage chunk, then [DONE].
 * @returns the content deltas (non-empty), the finish reason and the usage.
 */
export function checkSuccessfulStream(s: ClientStream): { deltas: string[]; finish: string; usage: Json; id: string } {
  assert.equal(s.res.status, 200);
  assert.equal(s.res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const id = s.res.headers.get('x-op-generation-id');
  assert.match(id ?? '', /^gen_/);
  assert.match(s.res.headers.get('x-request-id') ?? '', /^req_/);
  for (const e of s.events) {
    assert.deepEqual(validateChatCompletionChunk(e), [], JSON.stringify(e).slice(0, 300));
    assert.equal(e.id, id);
    assert.equal(e.model, 'test/model');
    assert.equal(e.object, 'chat.completion.chunk');
    assert.equal(e.error, undefined);
  }
  const first = s.events[0]!;
  assert.deepEqual(first.choices, [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  const last = s.events.at(-1)!;
  assert.deepEqual(last.choices, []);
  const finishes = s.events.filter((e) => e.choices?.[0]?.finish_reason);
  assert.equal(finishes.length, 1);
  assert.equal(s.events.at(-2), finishes[0]);
  assert.deepEqual(finishes[0]!.choices[0].delta, {});
  const deltas = s.events.slice(1, -2).map((e) => e.choices[0].delta.content).filter((c): c is string => typeof c === 'string');
  return { deltas, finish: finishes[0]!.choices[0].finish_reason as string, usage: last.usage as Json, id: id! };
}

/** The generation record with id `id`, after a flush; throws when there is none. */
export async function generationRow(gw: TestGateway, id: string) {
  await gw.flush();
  return gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Poll for a record written after the response ended (cancellations). ≤ 2 s. */
export async function waitForRow(gw: TestGateway, id: string) {
  const deadline = Date.now() + 2000;
  while (true) {
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst();
    if (row) return row;
    if (Date.now() > deadline) throw new Error(`no generation record ${id} within 2 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Check a JSON error response: status, envelope validity, request id; returns `error`. */
export async function checkErrorResponse(res: Response, status: number): Promise<Json> {
  assert.equal(res.status, status);
  assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
  const body = (await res.json()) as Json;
  assert.deepEqual(validateErrorResponse(body), []);
  assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  return body.error as Json;
}

/** The single error chunk of a stream that failed after its first byte. */
export function checkErrorChunk(s: ClientStream): Json {
  assert.equal(s.res.status, 200);
  const withError = s.events.filter((e) => e.error !== undefined);
  assert.equal(withError.length, 1, 'exactly one chunk carries `error`');
  const chunk = withError[0]!;
  assert.equal(s.events.at(-1), chunk, 'the error chunk is the last before [DONE]');
  assert.equal(chunk.id, s.res.headers.get('x-op-generation-id'));
  assert.deepEqual(chunk.choices, [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }]);
  assert.equal(chunk.error.request_id, s.res.headers.get('x-request-id'));
  for (const key of ['code', 'message', 'kind', 'scope', 'type', 'param', 'request_id']) assert.ok(key in chunk.error, `error.${key}`);
  // Everything before it is a valid chunk without a finish reason.
  for (const e of s.events.slice(0, -1)) {
    assert.deepEqual(validateChatCompletionChunk(e), []);
    assert.equal(e.choices[0].finish_reason, null);
  }
  return chunk;
}
