/**
 * Several weighted credentials per provider (`providers[].api_keys`, issue 20 item 4), through a
 * real gateway on port 0 and fake upstreams on port 0: the load spread by weight, each upstream
 * call carrying the chosen key; a 429 or an auth failure cooling that key and not the endpoint
 * (the same endpoint retried at once with another key); every key cooling → the endpoint
 * skipped as cooling; the record naming the label and never a key (nor the error body, nor the
 * log); the config checks; the `anthropic` (`x-api-key`) and `azure` (`api-key`) kinds.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { startUpstream, type RecordedRequest, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { testLogFile } from '../helpers/test-output.js';
import { startFakeAzure, type FakeAzure } from '../helpers/azure-fake.js';
import { ConfigError, parseConfig, parseConfigWithWarnings } from '../../src/config/load.js';
import { describePresetExpansions } from '../../src/config/provider-presets.js';
import { describeCredentialLines } from '../../src/config/credentials-schema.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { CredentialCooldowns } from '../../src/routing/provider-credentials.js';
import { providerSecrets } from '../../src/providers/upstream-errors.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Key values of no well-known shape: only the configured-secret redaction can catch them. */
const KEYS = { a: 'plainkey-alpha-000111222', b: 'plainkey-bravo-333444555', c: 'plainkey-charlie-666777888' } as const;
const LABEL_OF = new Map<string, string>(Object.entries(KEYS).map(([label, key]) => [key, label]));
const ALL_KEYS: readonly string[] = Object.values(KEYS);

const chatAnswer = (content: string) => ({
  json: { id: 'chatcmpl-x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
});
const bearerOf = (r: RecordedRequest) => String(r.headers.authorization ?? '').replace(/^Bearer /, '');

function keyedProvider(id: string, url: string, weights: Record<keyof typeof KEYS, number> = { a: 1, b: 1, c: 1 }): Json {
  return { id, kind: 'openai', base_url: url, api_keys: (Object.keys(KEYS) as (keyof typeof KEYS)[]).map((label) => ({ label, key: KEYS[label], weight: weights[label] })) };
}

function model(id: string, providers: string[]): Json {
  return { id, context_length: 8192, endpoints: providers.map((p) => ({ provider: p, upstream_model: `${p}-model`, pricing: { prompt: 1, completion: 1 }, supported_parameters: ['max_tokens', 'tools'] })) };
}

async function chat(gw: TestGateway, body: Json): Promise<{ status: number; json: Json; text: string; generationId: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Json, text, generationId: res.headers.get('x-op-generation-id') ?? '' };
}

async function generation(gw: TestGateway, id: string): Promise<Json> {
  await gw.flush();
  const res = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
  assert.equal(res.status, 200);
  return ((await res.json()) as Json).data as Json;
}

async function rowText(gw: TestGateway, id: string): Promise<string> {
  await gw.flush();
  const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return JSON.stringify(row);
}

describe('api_keys: the load is spread by weight', () => {
  let up: Upstream;
  let gw: TestGateway;
  before(async () => {
    up = await startUpstream();
    up.setDefault(chatAnswer('ok'));
    gw = await startGateway({ providers: [keyedProvider('oa', up.url, { a: 1, b: 1, c: 2 })], models: [model('t/m', ['oa'])] }, { random: seededRandom(20) });
  });
  after(async () => {
    await gw?.close();
    await up?.close();
  });

  test('weights 1/1/2 over 400 requests: about 100/100/200, each upstream call with the key the record names', async () => {
    const served: string[] = [];
    for (let i = 0; i < 400; i++) {
      const r = await chat(gw, { model: 't/m' });
      assert.equal(r.status, 200, r.text);
      served.push(r.generationId);
    }
    assert.equal(up.requests.length, 400);
    const counts = { a: 0, b: 0, c: 0 } as Record<string, number>;
    for (const r of up.requests) {
      const label = LABEL_OF.get(bearerOf(r));
      assert.ok(label, `every upstream call carries one of the configured keys (got ${String(r.headers.authorization)})`);
      counts[label]!++;
    }
    // Binomial spread: 400 draws, sd ≈ 8.7 for a and b (p = 1/4) and 10 for c (p = 1/2); ignoring
    // the weights (133 each) or taking one key fails these bounds.
    assert.ok(counts.a! >= 70 && counts.a! <= 130, `a: ${counts.a}`);
    assert.ok(counts.b! >= 70 && counts.b! <= 130, `b: ${counts.b}`);
    assert.ok(counts.c! >= 165 && counts.c! <= 235, `c: ${counts.c}`);
    assert.equal(counts.a! + counts.b! + counts.c!, 400);
    // The record names the label the call went out with (requests are sequential: the n-th record is the n-th call).
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 399]) {
      const g = await generation(gw, served[i]!);
      const label = LABEL_OF.get(bearerOf(up.requests[i]!));
      assert.equal(g.credential, label);
      assert.equal(g.provider_responses[0].credential, label);
      assert.equal(g.provider_responses.length, 1);
    }
    const row = await rowText(gw, served[0]!);
    for (const key of ALL_KEYS) assert.equal(row.includes(key), false);
  });
});

describe('api_keys: a 429 or an auth failure cools that key, not the endpoint', () => {
  let keyed: Upstream;
  let other: Upstream;
  let gw: TestGateway;
  /** Each key's scripted failure: a status the keyed upstream answers that key with. */
  const failing = new Map<string, Json>();
  before(async () => {
    [keyed, other] = await Promise.all([startUpstream(), startUpstream()]);
    keyed.setResponder((r) => failing.get(bearerOf(r)));
    keyed.setDefault(chatAnswer('keyed'));
    other.setDefault(chatAnswer('other'));
    gw = await startGateway(
      {
        retention: 30,
        routing: { retry_after_cap_ms: 60_000, recent_failure_ms: 0, circuit_breaker: { failure_threshold: 1000 } },
        providers: [keyedProvider('keyed', keyed.url), { id: 'other', kind: 'openai', base_url: other.url, api_key: 'plainkey-other-999000111' }],
        models: [model('t/m', ['keyed', 'other']), model('t/keyed-only', ['keyed'])],
      },
      { random: seededRandom(7) },
    );
  });
  after(async () => {
    await gw?.close();
    await Promise.all([keyed?.close(), other?.close()]);
  });
  const order = { provider: { order: ['keyed', 'other'] } };

  /** Requests until one reaches `key` (which fails and is retried with another key); returns that request's generation. */
  async function untilKeyHit(key: string): Promise<Json> {
    for (let i = 0; i < 40; i++) {
      const before = keyed.requests.filter((r) => bearerOf(r) === key).length;
      const r = await chat(gw, { model: 't/m', ...order });
      assert.equal(r.status, 200, r.text);
      if (keyed.requests.filter((q) => bearerOf(q) === key).length > before) return generation(gw, r.generationId);
    }
    throw new Error(`key ${LABEL_OF.get(key)} was never chosen in 40 requests`);
  }

  test('a 429 on key a: the request is served at once by another key of the same endpoint; later requests skip a; the endpoint is not cooled', async () => {
    failing.set(KEYS.a, { status: 429, headers: { 'retry-after': '30' }, json: { error: { message: `rate limited for ${KEYS.a}`, type: 'rate_limit' } } });
    const g = await untilKeyHit(KEYS.a);
    assert.equal(g.status, 'success');
    assert.equal(g.provider_responses.length, 2);
    assert.deepEqual(g.provider_responses.map((a: Json) => [a.endpoint, a.credential, a.status, a.error_code]), [
      ['keyed/keyed-model', 'a', 429, 'upstream_rate_limited'],
      ['keyed/keyed-model', g.credential, 200, null],
    ]);
    assert.ok(g.credential === 'b' || g.credential === 'c', `served by b or c, not ${g.credential}`);
    assert.match(g.provider_responses[1].reason, /:next-key$/);
    const aCalls = keyed.requests.filter((r) => bearerOf(r) === KEYS.a).length;
    for (let i = 0; i < 15; i++) assert.equal((await chat(gw, { model: 't/m', ...order })).json.choices[0].message.content, 'keyed');
    assert.equal(keyed.requests.filter((r) => bearerOf(r) === KEYS.a).length, aCalls, 'a cools: no call with it');
    assert.equal(other.requests.length, 0, 'the second endpoint is never used while b and c serve');
    const ep = (await (await fetch(`${gw.baseURL}/models/t/m/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } })).json()) as Json;
    const keyedEp = ep.data.endpoints.find((e: Json) => e.tag === 'keyed/keyed-model');
    assert.equal(keyedEp.provider_name, 'keyed');
    assert.equal(keyedEp.cooldown_until, null, 'the endpoint itself is not cooling');
    assert.equal(keyedEp.cooldown_reason, null);
  });

  test('a 401 on key b cools b: its request is served by c; later requests use c only', async () => {
    failing.set(KEYS.b, { status: 401, json: { error: { message: `Incorrect API key provided: ${KEYS.b}`, type: 'invalid_request_error', code: 'invalid_api_key' } } });
    const g = await untilKeyHit(KEYS.b);
    assert.deepEqual(g.provider_responses.map((a: Json) => [a.credential, a.status, a.error_code]), [
      ['b', 401, 'upstream_auth_failed'],
      ['c', 200, null],
    ]);
    assert.equal(g.credential, 'c');
    const start = keyed.requests.length;
    for (let i = 0; i < 10; i++) assert.equal((await chat(gw, { model: 't/m', ...order })).status, 200);
    assert.deepEqual([...new Set(keyed.requests.slice(start).map((r) => LABEL_OF.get(bearerOf(r))))], ['c']);
    assert.equal(other.requests.length, 0);
    // The key the upstream quoted is in no record and no error text.
    assert.equal((await rowText(gw, g.id)).includes(KEYS.b), false);
  });

  test('every key cooling: the failing request falls over to the next endpoint, and the endpoint is then skipped as cooling', async () => {
    failing.set(KEYS.c, { status: 429, headers: { 'retry-after': '30' }, json: { error: { message: 'slow down' } } });
    const r = await chat(gw, { model: 't/m', ...order });
    assert.equal(r.status, 200);
    assert.equal(r.json.choices[0].message.content, 'other');
    const g = await generation(gw, r.generationId);
    assert.deepEqual(g.provider_responses.map((a: Json) => [a.endpoint, a.credential ?? null, a.status]), [
      ['keyed/keyed-model', 'c', 429],
      ['other/other-model', null, 200],
    ]);
    assert.equal(g.credential, null, 'the provider that served has one key');
    const keyedCalls = keyed.requests.length;
    const next = await chat(gw, { model: 't/m', ...order });
    assert.equal(next.json.choices[0].message.content, 'other');
    assert.equal(keyed.requests.length, keyedCalls, 'no call to the endpoint whose keys all cool');
    assert.deepEqual((await generation(gw, next.generationId)).provider_responses.map((a: Json) => a.endpoint), ['other/other-model']);
    // A model served by that endpoint only: refused as temporarily unavailable, with the reason and a Retry-After.
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 't/keyed-only', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const only = (await res.json()) as Json;
    assert.equal(res.status, 503);
    assert.equal(only.error.code, 'endpoints_unavailable');
    assert.deepEqual(only.error.metadata.excluded, [{ endpoint: 'keyed/keyed-model', model: 't/keyed-only', reason: 'cooldown', detail: 'cooling down: every key of provider keyed is cooling after a rate limit or an auth failure' }]);
    const retryAfter = Number(res.headers.get('retry-after'));
    assert.ok(retryAfter >= 20 && retryAfter <= 30, `retry-after ${retryAfter}: the soonest key back (a cools 30 s from the first test)`);
    assert.equal(keyed.requests.length, keyedCalls);
  });

  test('no key value in any record, error body or the log', async () => {
    // The upstream quotes the key in its error: the client's error and the record have it redacted.
    failing.clear();
    const solo = await startUpstream();
    solo.setDefault({ status: 400, json: { error: { message: `bad request from key ${KEYS.a} (and ${KEYS.c})`, type: 'invalid_request_error' } } });
    const gw2 = await startGateway({ retention: 30, providers: [{ id: 'solo', kind: 'openai', base_url: solo.url, api_keys: [{ label: 'only', key: KEYS.a }, { label: 'spare', key: KEYS.c, weight: 1 }] }], models: [model('t/solo', ['solo'])] });
    try {
      const r = await chat(gw2, { model: 't/solo' });
      assert.equal(r.status, 400);
      assert.match(r.json.error.message, /\[redacted\]/);
      for (const key of ALL_KEYS) assert.equal(r.text.includes(key), false, 'error body');
      const row = await rowText(gw2, r.generationId);
      assert.match(row, /\[redacted\]/);
      for (const key of ALL_KEYS) assert.equal(row.includes(key), false, 'record');
    } finally {
      await gw2.close();
      await solo.close();
    }
    for (const id of await gw.store.db.selectFrom('generations').select('id').execute().then((rows) => rows.map((x) => x.id))) {
      const row = await rowText(gw, id);
      for (const key of ALL_KEYS) assert.equal(row.includes(key), false, `record ${id}`);
    }
    const log = readFileSync(testLogFile('gateway'), 'utf8');
    assert.match(log, /"credential":"a"/, 'the log names the key by its label');
    for (const key of ALL_KEYS) assert.equal(log.includes(key), false, 'log');
  });
});

describe('api_keys: many bad keys leave attempts for the fallbacks', () => {
  test('six keys refused (401): three are tried on the endpoint (two next-key retries), then the fallback serves within routing.max_attempts', async () => {
    const bad = await startUpstream();
    const good = await startUpstream();
    bad.setDefault({ status: 401, json: { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } } });
    good.setDefault(chatAnswer('fallback'));
    const keys = Array.from({ length: 6 }, (_, i) => ({ label: `k${i}`, key: `plainkey-many-${i}-0011223344` }));
    const gw2 = await startGateway({ providers: [{ id: 'pool', kind: 'openai', base_url: bad.url, api_keys: keys }, { id: 'backup', kind: 'openai', base_url: good.url, api_key: 'sk-backup-0123456789abcdef' }], models: [model('t/pool', ['pool', 'backup'])] });
    try {
      const r = await chat(gw2, { model: 't/pool', provider: { order: ['pool', 'backup'] } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.choices[0].message.content, 'fallback');
      const g = await generation(gw2, r.generationId);
      assert.deepEqual(g.provider_responses.map((a: Json) => [a.endpoint, a.status, /:next-key$/.test(String(a.reason))]), [
        ['pool/pool-model', 401, false],
        ['pool/pool-model', 401, true],
        ['pool/pool-model', 401, true],
        ['backup/backup-model', 200, false],
      ]);
      assert.equal(new Set(bad.requests.map(bearerOf)).size, 3, 'three different keys tried');
    } finally {
      await gw2.close();
      await bad.close();
      await good.close();
    }
  });
});

describe('api_keys on the anthropic and azure kinds', () => {
  let claude: Upstream;
  let az: FakeAzure;
  let gw: TestGateway;
  before(async () => {
    claude = await startUpstream();
    claude.setDefault({ json: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } });
    az = await startFakeAzure({ apiKey: KEYS.b, deployments: ['gpt-dep'] });
    gw = await startGateway(
      {
        routing: { retry_after_cap_ms: 60_000, recent_failure_ms: 0, circuit_breaker: { failure_threshold: 1000 } },
        providers: [
          { id: 'claude', kind: 'anthropic', base_url: claude.url, api_keys: [{ label: 'team-a', key: KEYS.a }, { label: 'team-c', key: KEYS.c, weight: 3 }] },
          // The fake accepts KEYS.b only: the key "stale" is refused with Azure's 401.
          { id: 'az', kind: 'azure', base_url: az.url, api_keys: [{ label: 'stale', key: KEYS.a }, { label: 'fresh', key: KEYS.b }] },
        ],
        models: [
          { id: 'anthropic/claude', context_length: 8192, endpoints: [{ provider: 'claude', upstream_model: 'claude-x', supported_parameters: ['max_tokens'] }] },
          { id: 'azure/gpt', context_length: 8192, endpoints: [{ provider: 'az', upstream_model: 'gpt-dep', supported_parameters: ['max_tokens'] }] },
        ],
      },
      { random: seededRandom(3) },
    );
  });
  after(async () => {
    await gw?.close();
    await claude?.close();
    await az?.close();
  });

  test('anthropic: each call sends the chosen key as x-api-key, on chat and on the Messages pass-through', async () => {
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    const anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await openai.chat.completions.create({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      assert.equal(res.data.choices[0]!.message.content, 'hello');
      ids.push(res.response.headers.get('x-op-generation-id')!);
    }
    for (let i = 0; i < 6; i++) {
      const res = await anthropic.messages.create({ model: 'anthropic/claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      assert.deepEqual(res.data.content, [{ type: 'text', text: 'hello' }]);
      ids.push(res.response.headers.get('x-op-generation-id')!);
    }
    assert.equal(claude.requests.length, 12);
    for (const [i, r] of claude.requests.entries()) {
      assert.equal(r.headers.authorization, undefined);
      const label = { [KEYS.a]: 'team-a', [KEYS.c]: 'team-c' }[String(r.headers['x-api-key'])];
      assert.ok(label, `x-api-key is one of the keys (got ${String(r.headers['x-api-key'])})`);
      assert.equal((await generation(gw, ids[i]!)).credential, label);
    }
    assert.deepEqual(new Set(claude.requests.map((r) => r.headers['x-api-key'])), new Set([KEYS.a, KEYS.c]), 'both keys served');
  });

  test('azure: the key goes as api-key; the refused key is cooled after its 401 and the request served by the other', async () => {
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    const labels: string[][] = [];
    for (let i = 0; i < 6; i++) {
      const res = await openai.chat.completions.create({ model: 'azure/gpt', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      assert.equal(typeof res.data.choices[0]!.message.content, 'string');
      const g = await generation(gw, res.response.headers.get('x-op-generation-id')!);
      assert.equal(g.credential, 'fresh');
      labels.push(g.provider_responses.map((a: Json) => `${a.credential}:${a.status}`));
    }
    // "stale" is tried once (with this seed, on the first request), then it cools for 60 s; every request succeeds.
    assert.deepEqual(labels[0], ['stale:401', 'fresh:200']);
    assert.equal(az.refused.length, 1);
    assert.equal(labels.flat().filter((l) => l === 'stale:401').length, 1);
    assert.equal(az.requests.length, 6);
    assert.ok(az.requests.every((r) => r.auth === 'api-key'));
    assert.ok(labels.every((l) => l.at(-1) === 'fresh:200'));
  });
});

describe('api_keys on the gemini kind', () => {
  let gem: Upstream;
  let gw: TestGateway;
  before(async () => {
    gem = await startUpstream();
    gem.setDefault({ json: { candidates: [{ content: { role: 'model', parts: [{ text: 'gemini says hi' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 3, totalTokenCount: 5 } } });
    gw = await startGateway(
      {
        providers: [{ id: 'gem', kind: 'gemini', base_url: new URL(gem.url).origin, api_keys: [{ label: 'g-one', key: KEYS.a }, { label: 'g-two', key: KEYS.b }] }],
        models: [{ id: 'google/gemini', context_length: 8192, endpoints: [{ provider: 'gem', upstream_model: 'gemini-x', supported_parameters: ['max_tokens'] }] }],
      },
      { random: seededRandom(5) },
    );
  });
  after(async () => {
    await gw?.close();
    await gem?.close();
  });

  test('each call sends the chosen key as x-goog-api-key, and the record names it', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await chat(gw, { model: 'google/gemini' });
      assert.equal(r.json.choices[0].message.content, 'gemini says hi');
      ids.push(r.generationId);
    }
    const byKey = { [KEYS.a]: 'g-one', [KEYS.b]: 'g-two' } as Record<string, string>;
    for (const [i, r] of gem.requests.entries()) {
      assert.match(r.path, /\/models\/gemini-x:generateContent$/);
      assert.equal((await generation(gw, ids[i]!)).credential, byKey[String(r.headers['x-goog-api-key'])]);
    }
    assert.deepEqual(new Set(gem.requests.map((r) => byKey[String(r.headers['x-goog-api-key'])])), new Set(['g-one', 'g-two']));
  });
});

describe('api_keys on streams, embeddings and count_tokens', () => {
  let up: Upstream;
  let claude: Upstream;
  let gw: TestGateway;
  before(async () => {
    [up, claude] = await Promise.all([startUpstream(), startUpstream()]);
    up.setResponder((r) => {
      if (bearerOf(r) === KEYS.a) return { status: 429, headers: { 'retry-after': '30' }, json: { error: { message: 'slow down', type: 'rate_limit' } } };
      if (r.path.endsWith('/embeddings')) return { json: { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.25, 0.5] }], model: 'emb', usage: { prompt_tokens: 3, total_tokens: 3 } } };
      return {
        sse: [
          JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'streamed' }, finish_reason: null }] }),
          JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }),
        ],
      };
    });
    claude.setDefault({ json: { input_tokens: 42 } });
    gw = await startGateway(
      {
        routing: { retry_after_cap_ms: 60_000, recent_failure_ms: 0, circuit_breaker: { failure_threshold: 1000 } },
        providers: [
          // a takes nearly every first draw: its 429 is met at once.
          { id: 'oa', kind: 'openai', base_url: up.url, api_keys: [{ label: 'a', key: KEYS.a, weight: 1000 }, { label: 'b', key: KEYS.b }] },
          { id: 'claude', kind: 'anthropic', base_url: claude.url, api_keys: [{ label: 'only', key: KEYS.c }] },
        ],
        models: [
          model('t/chat', ['oa']),
          { id: 't/embed', context_length: 8192, architecture: { output_modalities: ['embeddings'] }, endpoints: [{ provider: 'oa', upstream_model: 'emb', embeddings: true }] },
          { id: 'anthropic/claude', context_length: 8192, endpoints: [{ provider: 'claude', upstream_model: 'claude-x', supported_parameters: ['max_tokens'] }] },
        ],
      },
      { random: seededRandom(11) },
    );
  });
  after(async () => {
    await gw?.close();
    await Promise.all([up?.close(), claude?.close()]);
  });

  test('a stream: the 429 of key a before any content, the same endpoint streams with b; embeddings then go with b', async () => {
    const openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    const { data: stream, response } = await openai.chat.completions.create({ model: 't/chat', stream: true, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'streamed');
    const g = await generation(gw, response.headers.get('x-op-generation-id')!);
    assert.deepEqual(g.provider_responses.map((a: Json) => [a.credential, a.status, a.error_code]), [
      ['a', 429, 'upstream_rate_limited'],
      ['b', 200, null],
    ]);
    assert.equal(g.credential, 'b');
    assert.deepEqual(up.requests.map((r) => LABEL_OF.get(bearerOf(r))), ['a', 'b']);
    const emb = await openai.embeddings.create({ model: 't/embed', input: 'hello' }).withResponse();
    assert.deepEqual(emb.data.data[0]!.embedding, [0.25, 0.5]);
    assert.equal(bearerOf(up.requests.at(-1)!), KEYS.b);
    assert.equal(up.requests.length, 3, 'a cools: not tried for the embeddings');
    assert.equal((await generation(gw, emb.response.headers.get('x-op-generation-id')!)).credential, 'b');
  });

  test('count_tokens counts upstream with the key of the provider', async () => {
    const res = await fetch(`${gw.origin}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': gw.adminKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'Hello there' }] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { input_tokens: 42 });
    assert.equal(claude.requests.length, 1);
    assert.match(claude.requests[0]!.path, /\/messages\/count_tokens$/);
    assert.equal(claude.requests[0]!.headers['x-api-key'], KEYS.c);
  });
});

describe('api_keys: the config', () => {
  const base = (provider: Json, endpoint: Json = {}) => ({ providers: [{ id: 'p', ...provider }], models: [{ id: 't/m', context_length: 4096, endpoints: [{ provider: 'p', upstream_model: 'm', ...endpoint }] }] });
  const issuesOf = (raw: unknown, env: NodeJS.ProcessEnv = {}): readonly string[] => {
    try {
      parseConfig(raw, 'test', env);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      return err.issues;
    }
    assert.fail('the config was accepted');
  };
  const two = [{ label: 'one', key: 'k-one-111111' }, { label: 'two', key: 'k-two-222222', weight: 3 }];

  test('parsed with defaults; the catalog has one frozen view per key and the endpoint target unchanged', () => {
    const config = parseConfig(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: two }), 'test', {});
    assert.deepEqual(config.providers[0]!.api_keys, [{ label: 'one', key: 'k-one-111111', weight: 1 }, { label: 'two', key: 'k-two-222222', weight: 3 }]);
    const target = buildCatalog(config).models.get('t/m')!.endpoints[0]!;
    assert.equal(target.provider.api_key, undefined);
    assert.deepEqual(target.credentials!.map((c) => [c.label, c.weight, c.target.provider.api_key, c.target.id]), [
      ['one', 1, 'k-one-111111', 'p/m'],
      ['two', 3, 'k-two-222222', 'p/m'],
    ]);
    assert.ok(Object.isFrozen(target.credentials![0]!.target) && Object.isFrozen(target.credentials![0]!.target.provider));
    assert.deepEqual(providerSecrets(config.providers[0]!), ['k-one-111111', 'k-two-222222']);
    assert.deepEqual(describeCredentialLines(config.providers), ['providers[0] "p": 2 keys: one (weight 1), two (weight 3)']);
  });

  test('api_key and api_keys together are refused, naming both', () => {
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key: 'k-single', api_keys: two })), [
      'providers[0].api_keys: give either api_key or api_keys, not both (api_key is one key; api_keys lists several with labels and weights)',
    ]);
  });

  test('duplicate labels, an empty list, a bad weight, a bad label and a key with a newline are refused', () => {
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [...two, { label: 'ONE', key: 'k-three-33333' }] })), [
      'providers[0].api_keys[2].label: duplicate label "ONE" (also api_keys[0]; labels are unique per provider, case-insensitively)',
    ]);
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [] })), ['providers[0].api_keys: list at least one key (or use api_key)']);
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [{ label: 'x', key: 'k', weight: 2.5 }] })), ['providers[0].api_keys[0].weight: must be a whole number']);
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [{ label: 'a b', key: 'k' }] })), ['providers[0].api_keys[0].label: must be a slug: letters, digits, ".", "_" or "-"']);
    assert.deepEqual(issuesOf(base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [{ label: 'nl', key: 'k-from-file\n' }] })), [
      'providers[0].api_keys[0].key: must not contain control characters (CR, LF, tab …); a value read from a file may carry a trailing newline',
    ]);
  });

  test('kinds whose auth is not a key refuse api_keys: vertex, azure with entra, local', () => {
    assert.deepEqual(issuesOf(base({ kind: 'vertex', vertex: { project: 'proj-1' }, api_keys: two })), [
      'providers[0].api_keys: kind "vertex" authenticates with Google credentials (vertex.key_file or Application Default Credentials), not keys: remove api_keys',
    ]);
    assert.deepEqual(issuesOf(base({ kind: 'azure', base_url: 'https://r.openai.azure.com', entra: { credential: 'managed_identity' }, api_keys: two })), [
      'providers[0].api_keys: an azure provider with entra authenticates with Entra ID tokens, not keys: remove api_keys, or entra',
    ]);
    assert.deepEqual(issuesOf(base({ kind: 'local', api_keys: two }, { upstream_model: 'hf:org/repo/model.gguf' })), ['providers[0].api_keys: kind "local" (the built-in engine) takes no key: remove api_keys']);
    // azure with keys, gemini, anthropic: accepted
    for (const p of [{ kind: 'azure', base_url: 'https://r.openai.azure.com', api_keys: two }, { kind: 'gemini', api_keys: two }, { kind: 'anthropic', api_keys: two }]) {
      assert.equal(parseConfig(base(p), 'test', {}).providers[0]!.api_keys!.length, 2);
    }
  });

  test('a preset with api_keys: no default key (its variable need not be set), ${VAR} in each key, config check shows labels and weights only', () => {
    const config = parseConfig(
      { providers: [{ id: 'groq', preset: 'groq', api_keys: [{ label: 'main', key: '${GROQ_KEY_MAIN}', weight: 2 }, { label: 'backup', key: '${GROQ_KEY_BACKUP}' }] }], models: [{ id: 'm/llama', context_length: 4096, endpoints: [{ provider: 'groq', upstream_model: 'llama' }] }] },
      'test',
      { GROQ_KEY_MAIN: 'gsk-main-0001', GROQ_KEY_BACKUP: 'gsk-backup-0002' },
    );
    const p = config.providers[0]!;
    assert.equal(p.api_key, undefined);
    assert.equal(p.kind, 'openai');
    assert.deepEqual(p.api_keys!.map((k) => [k.label, k.key, k.weight]), [['main', 'gsk-main-0001', 2], ['backup', 'gsk-backup-0002', 1]]);
    const lines = describePresetExpansions(config);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /2 keys: main \(weight 2\), backup \(weight 1\) \(sent as Authorization: Bearer\)/);
    assert.equal(lines[0]!.includes('gsk-'), false);
    assert.deepEqual(describeCredentialLines(config.providers), [], 'described with the preset');
    // An unset variable names its api_keys path; the preset's own key variable is not asked for.
    assert.deepEqual(issuesOf({ providers: [{ id: 'groq', preset: 'groq', api_keys: [{ label: 'main', key: '${GROQ_KEY_MAIN}' }] }] }), ['providers[0].api_keys[0].key: environment variable GROQ_KEY_MAIN is not set']);
    // A preset without api_keys still defaults to its variable.
    assert.equal(parseConfig({ providers: [{ id: 'groq', preset: 'groq' }] }, 'test', { GROQ_API_KEY: 'gsk-default-1' }).providers[0]!.api_key, 'gsk-default-1');
  });

  test('an empty default warns with the label; secrets: false keeps labels and weights without keys', () => {
    const raw = base({ kind: 'openai', base_url: 'http://127.0.0.1:1/v1', api_keys: [{ label: 'one', key: '${K1:-}' }, { label: 'two', key: '${K2}', weight: 2 }] });
    const { warnings } = parseConfigWithWarnings(raw, 'test', { K2: 'k-two-222222' });
    assert.deepEqual(warnings, [
      'providers[0].api_keys[0].key: provider "p" has an empty key "one" in api_keys: K1 is not set (the default after ":-" is empty), so the requests that draw it go out without a key; set K1, or remove that entry',
    ]);
    const catalogOnly = parseConfig(raw, 'test', {}, { secrets: false });
    assert.deepEqual(catalogOnly.providers[0]!.api_keys, [{ label: 'one', key: '', weight: 1 }, { label: 'two', key: '', weight: 2 }]);
  });
});

describe('api_keys: opinference config check', () => {
  test('prints the labels and weights of every provider with api_keys, never a key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'op-creds-'));
    try {
      const file = join(dir, 'keys.yaml');
      writeFileSync(
        file,
        [
          'providers:',
          '  - id: pool',
          '    kind: openai',
          '    base_url: http://127.0.0.1:9/v1',
          '    api_keys:',
          '      - { label: main, key: "${POOL_MAIN}", weight: 3 }',
          '      - { label: spare, key: plainkey-spare-4444 }',
          '  - id: groq',
          '    preset: groq',
          '    api_keys: [{ label: g1, key: "${POOL_MAIN}" }]',
          'models:',
          '  - id: t/m',
          '    context_length: 4096',
          '    endpoints: [{ provider: pool, upstream_model: m }]',
          '',
        ].join('\n'),
      );
      const root = fileURLToPath(new URL('../..', import.meta.url));
      const { OP_CONFIG: _c, GROQ_API_KEY: _g, ...env } = process.env;
      const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(root, 'src/cli.ts'), 'config', 'check', '--config', file], { env: { ...env, POOL_MAIN: 'plainkey-main-5555' }, cwd: root });
      assert.equal(stderr, '');
      assert.equal(
        stdout,
        [
          `${file}: ok — 2 providers, 1 models`,
          '  providers[1] "groq": preset groq (Groq) → kind openai, base_url https://api.groq.com/openai/v1, dialect groq, 1 key: g1 (weight 1) (sent as Authorization: Bearer)',
          '  providers[0] "pool": 2 keys: main (weight 3), spare (weight 1)',
          '',
        ].join('\n'),
      );
      assert.doesNotMatch(stdout, /plainkey-/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('CredentialCooldowns', () => {
  const creds = (['x', 'y', 'z'] as const).map((label, i) => ({ label, weight: i + 1, key: `p\u0000${label}`, target: {} as never }));
  test('a weighted pick over the keys not cooling, none when all cool; a longer cooldown stays', () => {
    let now = 1000;
    const c = new CredentialCooldowns(() => now);
    // total weight 6: [0,1) x, [1,3) y, [3,6) z
    assert.equal(c.pick(creds, () => 0)!.label, 'x');
    assert.equal(c.pick(creds, () => 2 / 6)!.label, 'y');
    assert.equal(c.pick(creds, () => 5.99 / 6)!.label, 'z');
    c.cool(creds[2]!, 5000, 'rate_limit');
    c.cool(creds[2]!, 1000, 'auth');
    assert.deepEqual(c.cooling(creds[2]!), { remainingMs: 5000, cause: 'rate_limit' });
    assert.equal(c.pick(creds, () => 0.99)!.label, 'y');
    assert.equal(c.pick(creds, () => 0.99, new Set(['p\u0000y']))!.label, 'x');
    c.cool(creds[0]!, 2000, 'auth');
    c.cool(creds[1]!, 3000, 'auth');
    assert.equal(c.pick(creds, () => 0.5), undefined);
    assert.equal(c.anyUsable(creds), false);
    assert.equal(c.soonestUsableMs(creds), 2000);
    now += 2000;
    assert.equal(c.pick(creds, () => 0.5)!.label, 'x');
    assert.equal(c.soonestUsableMs(creds), 0);
  });
});
