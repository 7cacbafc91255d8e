/**
 * The compiled request validators (src/util/compile-zod-parser.ts, issue #12) against zod: for many
 * valid bodies (hand-written seeds covering the schemas' fields, assistant turns built from the
 * recorded upstream responses) and seeded random mutations of them, the chat, Responses and
 * Messages parsers give exactly what the zod-only reference gives: the same output (same keys
 * in the same order, same values, same warnings) or the same error (`code`, `param`, status,
 * message). And the compiled validator refuses exactly the bodies zod refuses, so a valid body
 * never takes the slow path and an invalid one never slips through.
 *
 * The compiler is also checked on its own, node type by node type, with random values.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { compileFastParser, INVALID, type FastParser } from '../../src/util/compile-zod-parser.js';
import { fastChatRequest, parseChatRequest, parseChatRequestWithZod } from '../../src/ingress/openai/chat/chat-request-schema.js';
import { fastResponsesRequest, parseResponsesRequest, parseResponsesRequestWithZod } from '../../src/ingress/openai/responses/response-request-schema.js';
import {
  fastCountTokensRequest,
  fastMessagesRequest,
  parseCountTokensRequest,
  parseMessagesRequest,
  parseMessagesRequestWithZod,
} from '../../src/ingress/anthropic/messages/messages-request-schema.js';
import { fixturesAvailable, fixturesDir, loadJson } from '../helpers/replay-upstream.js';
import { seededRandom } from '../helpers/seeded-random.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const MUTANTS_PER_SEED = 120;

// ---------------------------------------------------------------------------------------------
// Seeds: valid bodies

const params = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

const CHAT_SEEDS: Json[] = [
  { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 256 },
  {
    model: 'm',
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 64,
    max_completion_tokens: 128,
    temperature: 0.7,
    top_p: 1,
    n: 1,
    stop: ['\n\n', 'END'],
    presence_penalty: 0.5,
    frequency_penalty: -0.5,
    logit_bias: { '50256': -100 },
    seed: 42,
    user: 'u-1',
    logprobs: true,
    top_logprobs: 3,
    top_k: 40,
    min_p: 0.1,
    repetition_penalty: 1.1,
    messages: [
      { role: 'system', content: 'Be brief.', name: 'sys' },
      { role: 'developer', content: [{ type: 'text', text: 'Use tools.' }] },
      { role: 'user', content: [{ type: 'text', text: 'Weather?', cache_control: { type: 'ephemeral' } }, { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } }] },
      {
        role: 'assistant',
        content: null,
        reasoning: 'thinking',
        reasoning_details: [{ type: 'reasoning.text', text: 'thinking', signature: null, id: null, format: 'anthropic-claude-v1', index: 0 }],
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
      { role: 'assistant', content: [{ type: 'text', text: 'Sunny.' }, { type: 'refusal', refusal: 'no' }], refusal: null },
      { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }, { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,AAAA' } }] },
    ],
    tools: [
      { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: params, strict: true } },
      { type: 'openrouter:web_search', parameters: { max_results: 3 } },
    ],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    parallel_tool_calls: false,
    response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: null } },
    reasoning: { effort: 'high', max_tokens: null, exclude: false, summary: 'auto' },
  },
  {
    model: 'm:nitro',
    models: ['a', 'b:floor'],
    provider: { order: ['p1'], allow_fallbacks: null, sort: { by: 'price', partition: 'none' }, max_price: { prompt: '1.5', completion: 2 }, preferred_max_latency: { p50: 1 }, data_collection: 'deny', zdr: null },
    op: { retention: 7, tags: ['t1'], session: 's', cache: true, cache_ttl: 60 },
    messages: [{ role: 'assistant', content: 'prefill', reasoning_content: 'because' }, { role: 'user', content: 'go on' }],
    tool_choice: 'none',
    response_format: { type: 'json_object' },
    reasoning_effort: 'low',
    unknown_field: { a: 1 },
  },
  {
    preset: 'my-preset',
    messages: [{ role: 'user', content: 'hi' }],
    include_reasoning: false,
    session_id: 'sess',
    prompt_cache_key: null,
    cache_control: { type: 'ephemeral', ttl: '1h' },
    service_tier: 'fast',
    verbosity: 'low',
    modalities: ['text', 'image'],
    metadata: { k: 'v' },
    usage: { include: true },
    plugins: [{ id: 'web' }],
    debug: { echo_upstream_body: true },
    trace: { trace_id: 'x' },
    image_config: { aspect_ratio: '1:1' },
    prediction: { type: 'content', content: 'x' },
    top_a: 0.5,
    web_search_options: {},
    stop_server_tools_when: [],
    prompt_cache_options: null,
    route: 'fallback',
    transforms: ['middle-out'],
    response_format: { type: 'grammar', grammar: 'root ::= "a"' },
    tools: [{ type: 'web_search' }],
    stop: 'END',
    models: null,
    provider: null,
  },
  { model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'required', reasoning: null, include_reasoning: true },
];

const RESPONSES_SEEDS: Json[] = [
  { model: 'm', input: 'hi' },
  { model: 'm', input: 'hi', max_output_tokens: 256, stream: true, store: false },
  {
    model: 'm',
    instructions: 'Be brief.',
    input: [
      { role: 'user', content: 'hi' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'auto' }, { type: 'input_file', file_data: 'AAAA', filename: 'a.pdf' }] },
      { type: 'message', role: 'assistant', id: 'msg_1', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }, { type: 'refusal', refusal: 'no' }] },
      { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'hmm' }], encrypted_content: 'enc' },
      { type: 'reasoning', id: 'rs_2' },
      { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}', id: 'fc_1', status: 'completed' },
      { type: 'function_call_output', call_id: 'c1', output: 'result' },
      { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'result' }], id: null, status: null },
      { type: 'item_reference', id: 'msg_0' },
    ],
    tools: [
      { type: 'function', name: 'f', description: 'F', parameters: params, strict: true },
      { type: 'namespace', name: 'ns', tools: [{ type: 'function', name: 'g', parameters: null }] },
      { type: 'web_search' },
    ],
    tool_choice: { type: 'function', name: 'f' },
    text: { format: { type: 'json_schema', name: 'a', schema: { type: 'object' } }, verbosity: 'low' },
    reasoning: { effort: 'medium', summary: 'auto' },
    temperature: 0.5,
    top_p: 0.9,
    metadata: { k: 'v' },
    parallel_tool_calls: true,
    previous_response_id: null,
    background: false,
    user: 'u',
    models: ['a'],
    provider: { only: ['p'] },
    op: { retention: 'none' },
    prompt_cache_key: 'kept for a native endpoint',
  },
  { model: 'm', input: [], previous_response_id: 'resp_1', tool_choice: 'auto', text: { format: { type: 'text' } }, reasoning: null },
];

const MESSAGES_SEEDS: Json[] = [
  { model: 'm', max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] },
  {
    model: 'm',
    max_tokens: 1024,
    stream: true,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '5m' } }],
    stop_sequences: ['END'],
    temperature: 1,
    top_p: 0.9,
    top_k: 5,
    metadata: { user_id: 'u' },
    thinking: { type: 'enabled', budget_tokens: 512 },
    tools: [
      { name: 'get_weather', description: 'Weather', input_schema: params, cache_control: null },
      { type: 'custom', name: 'g', input_schema: { type: 'object' }, strict: true },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
    ],
    tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'Weather?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }, { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' }, title: null }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 'sig' }, { type: 'redacted_thinking', data: 'x' }, { type: 'tool_use', id: 'tu_1', name: 'get_weather', input: { city: 'Paris' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: [{ type: 'text', text: '21' }], is_error: false }, { type: 'server_tool_use', id: 'x' }] },
    ],
    models: ['a'],
    provider: { sort: 'latency' },
    op: { tags: ['x'] },
    context_management: { edits: [] },
  },
  { model: 'm', max_tokens: 1, messages: [{ role: 'user', content: [] }], tool_choice: { type: 'none' }, thinking: { type: 'adaptive' }, system: 'sys' },
];

/** Valid bodies built from the recorded upstream responses (assistant turns, then a user turn). */
function recordedSeeds(): { chat: Json[]; messages: Json[] } {
  const chat: Json[] = [];
  const messages: Json[] = [];
  if (!fixturesAvailable()) return { chat, messages };
  for (const dir of readdirSync(fixturesDir)) {
    if (dir.startsWith('.') || dir.endsWith('.md')) continue;
    for (const file of readdirSync(path.join(fixturesDir, dir))) {
      if (!file.endsWith('.json')) continue;
      const body = loadJson(path.join(dir, file)) as Json;
      const message = body?.choices?.[0]?.message as Json | undefined;
      if (message && typeof message === 'object') {
        chat.push({ model: 'm', messages: [{ role: 'user', content: 'hi' }, message, { role: 'user', content: 'and?' }] });
      }
      if (body?.type === 'message' && Array.isArray(body.content)) {
        messages.push({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: body.content }, { role: 'user', content: 'and?' }] });
      }
    }
  }
  return { chat, messages };
}

// ---------------------------------------------------------------------------------------------
// Mutations

const VALUES: unknown[] = [
  null, true, false, 0, 1, -1, 0.5, 1.5, 2, 2.5, 3, 16, 17, 20, 21, 100, 101, 512, 100_000_000, 100_000_001, 2 ** 53, -101,
  '', 'x', 'auto', 'none', 'required', 'any', 'tool', 'function', 'text', 'user', 'assistant', 'system', 'developer', 'ephemeral',
  'message', 'function_call', 'function_call_output', 'reasoning', 'item_reference', 'input_text', 'output_text', 'tool_use',
  'tool_result', 'image', 'document', 'thinking', 'enabled', 'high', 'low', 'price', 'fast', 'sort', 'json_object', 'toString',
  'a'.repeat(65), 'a'.repeat(129), 'a'.repeat(257), 'bad name!', '1.5', '-1', 'custom', 'namespace', 'base64', 'url', 'web_search',
  [], {}, [{}], ['x'], [1], { type: 'text', text: 'a' }, { type: 'function' }, { role: 'user', content: 'x' },
  { type: 'function', function: { name: 'f', arguments: '{}' }, id: 'c' }, { type: 'ephemeral' },
];
const KEYS = [
  'foo', 'cache_control', 'name', 'type', 'role', 'content', 'text', 'id', 'tool_calls', 'refusal', 'reasoning', 'reasoning_content',
  'reasoning_details', 'tool_call_id', 'model', 'models', 'provider', 'op', 'preset', 'stream', 'temperature', 'top_p', 'n', 'stop',
  'logprobs', 'top_logprobs', 'tool_choice', 'tools', 'response_format', 'metadata', 'user', 'session_id', 'include_reasoning',
  'service_tier', 'plugins', 'route', 'transforms', 'max_tokens', 'max_completion_tokens', 'input', 'instructions', 'summary',
  'encrypted_content', 'status', 'call_id', 'output', 'arguments', 'thinking', 'signature', 'source', 'tool_use_id', 'is_error',
  'system', 'stop_sequences', 'top_k', 'input_schema', 'strict', 'parameters', 'description', 'retention', 'tags', 'session',
  'cache', 'cache_ttl', 'order', 'sort', 'max_price', 'only', 'allow_fallbacks', 'conversation', 'background',
  'previous_response_id', 'store', 'format', 'verbosity', 'function', 'toString', 'constructor', '__proto__', 'budget_tokens',
];

/** Every path into a JSON value (the root too). */
function paths(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((e, i) => paths(e, [...at, i], out));
  else if (v && typeof v === 'object') for (const k of Object.keys(v)) paths((v as Json)[k], [...at, k], out);
  return out;
}

function getAt(root: unknown, p: (string | number)[]): unknown {
  let v = root;
  for (const k of p) v = (v as Json)[k];
  return v;
}

/** Set an own property, as JSON.parse would (so `__proto__` is a key, not the prototype). */
function put(o: Json, k: string | number, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** One to three random edits of a copy of `seed`, as JSON data. */
function mutate(seed: Json, rnd: () => number): unknown {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  let body: unknown = JSON.parse(JSON.stringify(seed));
  const edits = 1 + Math.floor(rnd() * 3);
  for (let e = 0; e < edits; e++) {
    const p = pick(paths(body));
    const node = getAt(body, p);
    const parent = p.length > 0 ? (getAt(body, p.slice(0, -1)) as Json) : undefined;
    const key = p[p.length - 1];
    const op = Math.floor(rnd() * 6);
    if (op === 0 || !parent) {
      // Replace the node (the root only by an object: a non-object body is refused before any schema).
      if (parent) put(parent, key!, structuredClone(pick(VALUES)));
      else if (node && typeof node === 'object' && !Array.isArray(node)) put(node as Json, pick(KEYS), structuredClone(pick(VALUES)));
    } else if (op === 1) {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key!];
    } else if (op === 2 && node && typeof node === 'object' && !Array.isArray(node)) {
      put(node as Json, pick(KEYS), structuredClone(pick(VALUES)));
    } else if (op === 3 && Array.isArray(node)) {
      if (node.length > 0 && rnd() < 0.6) node.push(structuredClone(node[Math.floor(rnd() * node.length)]));
      else node.push(structuredClone(pick(VALUES)));
    } else if (op === 4 && typeof node === 'string') {
      put(parent, key!, pick(['', node + node, node.toUpperCase(), 'a'.repeat(300), node.slice(1)]));
    } else if (op === 4 && typeof node === 'number') {
      put(parent, key!, pick([node + 1, node - 1, -node, node + 0.5, node * 1000]));
    } else {
      // Swap in a value from elsewhere in the body (a shape valid somewhere, maybe not here).
      put(parent, key!, structuredClone(getAt(body, pick(paths(body)))));
    }
    body = JSON.parse(JSON.stringify(body));
  }
  return body;
}

// ---------------------------------------------------------------------------------------------
// Comparison

type Outcome = { ok: true; json: string; value: unknown } | { ok: false; error: unknown };

function run(parse: (b: unknown) => unknown, body: unknown): Outcome {
  try {
    const value = parse(body);
    return { ok: true, json: JSON.stringify(value), value };
  } catch (e) {
    if (!(e instanceof GatewayError)) return { ok: false, error: `not a GatewayError: ${String(e)}` };
    return { ok: false, error: { code: e.code, status: e.status, param: e.param, message: e.message } };
  }
}

interface Api {
  name: string;
  parse: (b: unknown) => unknown;
  reference: (b: unknown) => unknown;
  /** The compiled validator alone: INVALID or not. */
  fast: (b: Json) => unknown;
  seeds: Json[];
  /** Bodies built from recordings: compared like the seeds, but not all valid (see below). */
  recordedSeeds?: Json[];
}

interface Tally {
  bodies: number;
  accepted: number;
  refused: number;
}

/** Compare the parser with the zod reference on one body; return whether zod accepted it. */
function compare(api: Api, body: unknown, label: string): boolean {
  const text = JSON.stringify(body);
  const got = run(api.parse, JSON.parse(text));
  const want = run(api.reference, JSON.parse(text));
  const mustBe = `${api.name} ${label}: ${text.slice(0, 400)}`;
  assert.deepStrictEqual(got, want, mustBe);
  const copy = JSON.parse(text) as Json;
  const fast = api.fast(copy);
  assert.equal(JSON.stringify(copy), text, `the compiled validator leaves the body as it was: ${mustBe}`);
  assert.equal(fast !== INVALID, want.ok, `the compiled validator ${fast === INVALID ? 'refused' : 'accepted'} a body zod ${want.ok ? 'accepts' : 'refuses'}: ${mustBe}`);
  return want.ok;
}

function fuzz(api: Api, seed: number): Tally {
  const rnd = seededRandom(seed);
  const tally: Tally = { bodies: 0, accepted: 0, refused: 0 };
  const seeds = [...api.seeds, ...(api.recordedSeeds ?? [])];
  seeds.forEach((s, i) => {
    const valid = compare(api, s, `seed ${i}`);
    if (i < api.seeds.length) assert.equal(valid, true, `seed ${i} is a valid ${api.name} body`);
    for (let m = 0; m < MUTANTS_PER_SEED; m++) {
      const ok = compare(api, mutate(s, rnd), `mutant ${m} of seed ${i}`);
      tally.bodies++;
      if (ok) tally.accepted++;
      else tally.refused++;
    }
  });
  return tally;
}

const recorded = recordedSeeds();

const APIS: Api[] = [
  { name: 'chat', parse: parseChatRequest, reference: parseChatRequestWithZod, fast: fastChatRequest, seeds: CHAT_SEEDS, recordedSeeds: recorded.chat },
  { name: 'responses', parse: parseResponsesRequest, reference: parseResponsesRequestWithZod, fast: fastResponsesRequest, seeds: RESPONSES_SEEDS },
  { name: 'messages', parse: parseMessagesRequest, reference: (b) => parseMessagesRequestWithZod(b), fast: fastMessagesRequest, seeds: MESSAGES_SEEDS, recordedSeeds: recorded.messages },
  { name: 'count_tokens', parse: parseCountTokensRequest, reference: (b) => parseMessagesRequestWithZod(b, true), fast: fastCountTokensRequest, seeds: MESSAGES_SEEDS.map(({ max_tokens: _, ...rest }) => rest) },
];

describe('compiled request validators = zod', () => {
  test('the recorded responses give assistant turns to start from', { skip: fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent' }, () => {
    assert.ok(recorded.chat.length >= 15, `chat seeds from recordings: ${recorded.chat.length}`);
    assert.ok(recorded.messages.length >= 25, `Messages seeds from recordings: ${recorded.messages.length}`);
  });

  for (const [i, api] of APIS.entries()) {
    test(`${api.name}: seeds and ${MUTANTS_PER_SEED} mutants of each give the same output or the same error`, () => {
      const tally = fuzz(api, 1000 + i);
      assert.equal(tally.bodies, (api.seeds.length + (api.recordedSeeds?.length ?? 0)) * MUTANTS_PER_SEED);
      // Both kinds are well represented, so both directions are exercised.
      assert.ok(tally.accepted >= tally.bodies * 0.15, `accepted ${tally.accepted} of ${tally.bodies}`);
      assert.ok(tally.refused >= tally.bodies * 0.15, `refused ${tally.refused} of ${tally.bodies}`);
    });
  }

  test('a body zod refuses keeps zod\'s first issue as the error', () => {
    assert.throws(() => parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 3 }), {
      code: 'invalid_request',
      param: 'temperature',
      message: 'temperature: Number must be less than or equal to 2',
    });
    assert.throws(() => parseMessagesRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'tool_use', id: '', name: 'f', input: {} }] }] }), {
      code: 'invalid_request',
      param: 'messages[0].content[0].id',
      message: 'messages[0].content[0].id: String must contain at least 1 character(s)',
    });
    assert.throws(() => parseResponsesRequest({ model: 'm', input: [{ type: 'computer_call' }] }), {
      code: 'unsupported_parameter',
      param: 'input[0].type',
    });
  });

  test('a bad Responses input item is reported against its own type, with the whole path', () => {
    const refused = (input: unknown, param: string, message: string) =>
      assert.throws(() => parseResponsesRequest({ model: 'm', input }), { code: 'invalid_request', param, message: `${param}: ${message}` });
    refused([{ role: 'user', content: 'ok' }, { type: 'message', role: 'wizard', content: 'x' }], 'input[1].role', 'must be one of "user", "assistant", "system", "developer"');
    refused([{ role: 'user', content: [{ type: 'input_text' }] }], 'input[0].content[0].text', 'is required');
    refused([{ type: 'function_call', call_id: 'c', arguments: '{}' }], 'input[0].name', 'is required');
    refused([{ type: 'function_call_output', call_id: 'c', output: 5 }], 'input[0].output', 'must be string, got number');
    refused([{ role: 'user', content: [{ type: 'input_image', image_url: 5 }] }], 'input[0].content[0].image_url', 'must be string, got number');
    // Nothing to answer: refused by the gateway, naming input (not an upstream's `messages`).
    refused([], 'input', 'must not be empty (send a string or at least one input item, or previous_response_id)');
    refused('', 'input', 'must not be empty (send a string or at least one input item, or previous_response_id)');
    assert.deepEqual(parseResponsesRequest({ model: 'm', input: [], previous_response_id: 'resp_1' }).input, []);
  });

  test('a Messages block of type "toString" is an unknown block kept as sent, not a crash', () => {
    const req = parseMessagesRequest({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'toString', x: 1 }] }] });
    assert.deepEqual(req.messages[0]!.content, [{ type: 'toString', x: 1 }]);
    assert.deepEqual(parseMessagesRequestWithZod({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'constructor' }] }] }).messages[0]!.content, [{ type: 'constructor' }]);
  });
});

// ---------------------------------------------------------------------------------------------
// The compiler, node type by node type

const NODES: Record<string, z.ZodTypeAny> = {
  string: z.string().min(2).max(4),
  regex: z.string().regex(/^a+$/g),
  email: z.string().email(),
  number: z.number().int().gt(-2).lte(16),
  finite: z.number().finite(),
  literal: z.literal(2),
  enum: z.enum(['a', 'b']),
  nullish: z.boolean().nullable().optional(),
  default: z.object({ a: z.number().default(5), b: z.string().optional() }),
  strict: z.object({ a: z.number().optional() }).strict(),
  passthrough: z.object({ b: z.number().optional(), a: z.string().optional() }).passthrough(),
  strip: z.object({ b: z.number().optional(), a: z.string() }),
  array: z.array(z.number()).min(1).max(3),
  exact: z.array(z.unknown()).length(2),
  record: z.record(z.number()),
  recordKeys: z.record(z.string().min(2), z.unknown()),
  union: z.union([z.object({ a: z.number() }), z.object({ a: z.string() }).passthrough(), z.array(z.number())]),
  discriminated: z.discriminatedUnion('t', [z.object({ t: z.literal('a'), v: z.number() }), z.object({ t: z.literal('b') }).passthrough()]),
  refine: z.object({ a: z.number().optional(), b: z.number().optional() }).refine((o) => (o.a ?? 0) < (o.b ?? 1)),
  transform: z.string().transform((s) => s.length),
  transformIssue: z.number().transform((n, ctx) => {
    if (n > 2) ctx.addIssue({ code: 'custom', message: 'big' });
    return n * 2;
  }),
  undefined: z.object({ u: z.undefined().optional() }),
  lazy: z.lazy(() => z.number()),
};

describe('the compiler gives what zod gives, node by node', () => {
  const pool: unknown[] = [
    undefined, null, true, 0, 1, -1, -2, 1.5, 2, 5, 16, 17, Number.NaN, Infinity, 'a', 'aa', 'aaaa', 'aaaaa', 'b', 'x@example.com', 'ab',
    [], [1], [1, 2], [1, 2, 3, 4], ['a'], {}, { a: 1 }, { a: 'x' }, { a: 1, b: 2 }, { b: 2 }, { a: 'x', z: 1 }, { t: 'a', v: 1 },
    { t: 'b', q: 1 }, { t: 'c' }, { u: 1 }, { u: undefined }, { a: undefined }, { aa: 1, b: 'x' }, Object.create(null) as object,
    new Date(0), new Map(), Object.assign(Object.create(null) as object, { a: 1 }), JSON.parse('{"__proto__": 1, "a": "x"}'), JSON.parse('{"__proto__": {"a": 1}, "b": 2}'),
  ];
  for (const [name, schema] of Object.entries(NODES)) {
    test(name, () => {
      const fast: FastParser = compileFastParser(schema);
      let accepted = 0;
      for (const v of pool) {
        const want = schema.safeParse(v);
        const got = fast(v);
        assert.equal(got !== INVALID, want.success, `${name} on ${String(JSON.stringify(v))}`);
        if (want.success) {
          accepted++;
          assert.deepStrictEqual(got, want.data, `${name} on ${String(JSON.stringify(v))}`);
          assert.deepStrictEqual(Object.keys((got ?? {}) as object), Object.keys((want.data ?? {}) as object), `key order of ${name}`);
        }
      }
      assert.ok(accepted >= 1 && accepted < pool.length, `${name} accepted ${accepted} of ${pool.length}`);
    });
  }
});
