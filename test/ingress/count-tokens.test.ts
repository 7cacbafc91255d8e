/**
 * `POST /v1/messages/count_tokens` (issue 18 §4): the upstream's answer is read at most
 * `server.upstream_max_response_bytes`, the call counts against the key's request rate limit,
 * and it takes the model names `/v1/messages` takes (aliases, variants, presets).
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type ScriptedResponse, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The response cap of this gateway, in bytes. */
const CAP = 64 * 1024;

let gw: TestGateway;
let anth: Upstream;
let cheap: Upstream;

const endpoint = (provider: string, upstream: string, prompt: number) => ({ provider, upstream_model: upstream, pricing: { prompt, completion: 15 }, supported_parameters: ['max_tokens'] });

before(async () => {
  anth = await startUpstream();
  cheap = await startUpstream();
  gw = await startGateway({
    server: { upstream_max_response_bytes: CAP },
    providers: [
      { id: 'anth', kind: 'anthropic', base_url: anth.url, api_key: 'sk-ant' },
      { id: 'cheap', kind: 'anthropic', base_url: cheap.url, api_key: 'sk-cheap' },
    ],
    models: [
      { id: 'anthropic/claude', context_length: 200000, aliases: ['claude-x'], endpoints: [endpoint('anth', 'claude-up', 3), endpoint('cheap', 'claude-cheap', 1)] },
      { id: 'anthropic/solo', context_length: 200000, endpoints: [endpoint('anth', 'solo-up', 3)] },
    ],
    presets: [{ slug: 'brief', models: ['anthropic/claude'], system_prompt: 'Be brief.' }],
  });
});
after(async () => {
  await gw.close();
  await anth.close();
  await cheap.close();
});
afterEach(() => {
  anth.requests.length = 0;
  cheap.requests.length = 0;
});

async function count(key: string, body: Json): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(`${gw.origin}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

const messages = [{ role: 'user', content: 'Hello there' }];

describe('count_tokens', () => {
  test('an upstream answer over upstream_max_response_bytes is not read: the call is cut and the estimate answers', async () => {
    // Valid JSON with the count first: read whole (before the fix) it would be an upstream count of 7.
    const big = `{"input_tokens":7,"pad":"${'x'.repeat(4 * CAP)}"}`;
    const scripts: Array<[string, ScriptedResponse]> = [
      ['no content-length, sent in pieces', { rawChunks: [big], splitAt: 16 * 1024, headers: { 'content-type': 'application/json' } }],
      ['content-length over the cap', { text: big, headers: { 'content-type': 'application/json' } }],
    ];
    for (const [name, script] of scripts) {
      anth.enqueue(script);
      const r = await count(gw.adminKey, { model: 'anthropic/solo', messages });
      assert.equal(r.status, 200, name);
      assert.equal(r.headers.get('x-op-token-count'), 'estimated', name);
      assert.notEqual(r.body.input_tokens, 7, name);
      assert.equal(anth.requests.length, 1, name);
      anth.requests.length = 0;
    }
    anth.enqueue({ json: { input_tokens: 7 } });
    const small = await count(gw.adminKey, { model: 'anthropic/solo', messages });
    assert.deepEqual([small.headers.get('x-op-token-count'), small.body], ['upstream', { input_tokens: 7 }]);
  });

  test('counts against the key\'s request rate limit, with the x-ratelimit headers', async () => {
    const created = await gw.gateway.app.inject({ method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${gw.adminKey}` }, payload: { name: 'rpm2', rate_limit: { requests_per_minute: 2 } } });
    const key = (created.json() as Json).key as string;
    anth.setDefault({ json: { input_tokens: 5 } });
    try {
      const first = await count(key, { model: 'anthropic/solo', messages });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('x-ratelimit-limit-requests'), '2');
      assert.equal(first.headers.get('x-ratelimit-remaining-requests'), '1');
      assert.equal((await count(key, { model: 'anthropic/solo', messages })).status, 200);
      const third = await count(key, { model: 'anthropic/solo', messages });
      assert.equal(third.status, 429);
      assert.equal(third.body.error.type, 'rate_limit_error');
      assert.equal(third.body.error.code, 'rate_limited');
      assert.equal(third.headers.get('x-ratelimit-remaining-requests'), '0');
      assert.ok(Number(third.headers.get('retry-after')) >= 1);
      // The same budget as /v1/messages.
      const gen = await fetch(`${gw.origin}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ model: 'anthropic/solo', max_tokens: 5, messages }) });
      assert.equal(gen.status, 429);
      assert.equal(anth.requests.length, 2, 'refused counts are not sent upstream');
    } finally {
      anth.setDefault(undefined);
    }
  });

  test('the model names of /v1/messages: alias, :floor and :nitro variants, presets; an unknown variant is a 400', async () => {
    anth.setDefault({ json: { input_tokens: 11 } });
    cheap.setDefault({ json: { input_tokens: 12 } });
    try {
      // Without a variant the endpoint is a price-weighted draw; each endpoint answers its own count.
      const countOf: Record<string, number> = { 'anth/claude-up': 11, 'cheap/claude-cheap': 12 };
      for (const [model, endpoint] of [
        ['claude-x', undefined],
        ['anthropic/claude:floor', 'cheap/claude-cheap'],
        ['anthropic/claude:nitro', undefined],
        ['@preset/brief', undefined],
        ['anthropic/claude@preset/brief', undefined],
      ] as const) {
        const r = await count(gw.adminKey, { model, messages });
        assert.equal(r.status, 200, `${model}: ${JSON.stringify(r.body)}`);
        const served = r.headers.get('x-op-token-count-endpoint')!;
        if (endpoint) assert.equal(served, endpoint, model);
        assert.equal(r.headers.get('x-op-token-count'), 'upstream', model);
        assert.deepEqual(r.body, { input_tokens: countOf[served] }, model);
      }
      // Which endpoint the unpinned names drew is random; each upstream saw only its own model name,
      // and :floor's count went to the cheap endpoint.
      assert.ok(cheap.requests.length >= 1, 'the :floor count reached the cheap endpoint');
      assert.equal(anth.requests.length + cheap.requests.length, 5);
      assert.deepEqual([...new Set(cheap.requests.map((r) => (r.json as Json).model))], ['claude-cheap']);
      if (anth.requests.length > 0) assert.deepEqual([...new Set(anth.requests.map((r) => (r.json as Json).model))], ['claude-up']);
      const bad = await count(gw.adminKey, { model: 'anthropic/claude:fast', messages });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.type, 'invalid_request_error');
      assert.equal(bad.body.error.param, 'model');
    } finally {
      anth.setDefault(undefined);
      cheap.setDefault(undefined);
    }
  });
});
