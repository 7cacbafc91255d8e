/**
 * OpenRouter request parity (issue 14): every field of OpenRouter's chat request schema gets a
 * 200 (honoured, or named in the record's warnings), nulls on nullable fields, reasoning
 * options, sticky routing, model variants and presets. Upstreams scripted on port 0.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { parseConfig } from '../../src/config/load.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { HealthRegistry, meetsPerformance } from '../../src/routing/endpoint-health.js';
import { planRoute } from '../../src/routing/route-plan.js';
import { resolveModelNames } from '../../src/routing/model-names.js';
import { parseChatRequest } from '../../src/ingress/openai/chat/chat-request-schema.js';
import type { ChatRequest } from '../../src/core/chat-types.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const answer = (content: string, message: Json = {}) => ({
  json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content, ...message }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
});
const msgs = [{ role: 'user', content: 'hi' }];
const ALL_PARAMS = ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'tools', 'tool_choice', 'response_format', 'reasoning', 'logprobs', 'top_logprobs', 'prompt_cache_key', 'service_tier', 'verbosity', 'metadata', 'user', 'frequency_penalty', 'presence_penalty', 'repetition_penalty', 'min_p', 'logit_bias', 'parallel_tool_calls'];

function config(a: Upstream, b: Upstream, extra: Json = {}) {
  return {
    providers: [
      { id: 'cheap', kind: 'openai', base_url: a.url },
      { id: 'fast', kind: 'openai', base_url: b.url },
    ],
    models: [
      {
        id: 'test/model',
        context_length: 8192,
        endpoints: [
          { provider: 'cheap', upstream_model: 'cheap-model', pricing: { prompt: 0, completion: 0 }, supported_parameters: ALL_PARAMS },
          { provider: 'fast', upstream_model: 'fast-model', pricing: { prompt: 3, completion: 3 }, supported_parameters: ALL_PARAMS },
        ],
      },
      { id: 'test/other', context_length: 8192, endpoints: [{ provider: 'fast', upstream_model: 'other-model', pricing: { prompt: 1, completion: 1 }, supported_parameters: ALL_PARAMS }] },
    ],
    presets: [
      { slug: 'careful', models: ['test/other', 'test/model'], provider: { order: ['fast'] }, parameters: { temperature: 0.1, max_tokens: 77 }, system_prompt: 'Be careful.' },
      { slug: 'params-only', parameters: { temperature: 0.3 } },
    ],
    model_variants: [{ name: 'pinned', provider: { only: ['fast'] } }],
    ...extra,
  };
}

/** Every field of OpenRouter's ChatRequest (its spec, c26125a5), with the spec's own examples. */
const EVERY_FIELD: Json = {
  model: 'test/model',
  models: ['test/other'],
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] },
  ],
  cache_control: { type: 'ephemeral', ttl: '5m' },
  debug: { echo_upstream_body: true },
  frequency_penalty: 0.1,
  image_config: { aspect_ratio: '16:9' },
  logit_bias: { '50256': -100 },
  logprobs: true,
  max_completion_tokens: 100,
  max_tokens: null,
  metadata: { team: 'a', purpose: 'test' },
  min_p: 0.05,
  modalities: ['text'],
  parallel_tool_calls: null,
  plugins: [{ id: 'web', max_results: 3 }, { id: 'response-healing' }],
  prediction: { type: 'content', content: 'hello' },
  presence_penalty: 0,
  prompt_cache_key: 'conv-1',
  prompt_cache_options: { mode: 'explicit', ttl: '5m' },
  provider: {
    allow_fallbacks: null,
    data_collection: 'allow',
    enforce_distillable_text: false,
    ignore: null,
    max_price: { prompt: '5', completion: 5, request: '0.01', image: '1', audio: null },
    only: null,
    order: null,
    preferred_max_latency: { p50: 10, p90: null },
    preferred_min_throughput: 1,
    quantizations: null,
    require_parameters: false,
    sort: { by: 'price', partition: 'model' },
    zdr: null,
  },
  reasoning: { effort: 'medium', summary: 'concise' },
  reasoning_effort: null,
  repetition_penalty: 1.1,
  response_format: { type: 'text' },
  route: 'fallback',
  seed: 7,
  service_tier: 'fast',
  session_id: 'session-123',
  stop: ['\n\n'],
  stop_server_tools_when: [{ type: 'max_tool_calls', value: 3 }],
  stream: false,
  stream_options: null,
  temperature: 0.5,
  tool_choice: 'auto',
  tools: [
    { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
    { type: 'openrouter:web_search', parameters: { max_results: 3 } },
  ],
  top_a: 0.1,
  top_k: 40,
  top_logprobs: 2,
  top_p: 0.9,
  trace: { trace_id: 't-1', span_name: 'chat' },
  user: 'u'.repeat(300),
  // Outside the spec but sent by OpenRouter clients:
  usage: { include: true },
  transforms: ['middle-out'],
  verbosity: 'low',
  web_search_options: { search_context_size: 'low' },
  include_reasoning: true,
  safe_prompt: true, // a provider-specific field OpenRouter passes on: named in the warnings here
};

describe('OpenRouter request fields through the gateway', () => {
  let a: Upstream;
  let b: Upstream;
  let gw: TestGateway;
  const post = (body: Json) =>
    fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as Json }));
  const record = async (id: string) => {
    await gw.flush();
    const row = await gw.store.db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return { ...row, detail: JSON.parse(row.detail) as Json };
  };

  before(async () => {
    [a, b] = await Promise.all([startUpstream(), startUpstream()]);
    gw = await startGateway(config(a, b));
  });
  after(async () => {
    await gw?.close();
    await a?.close();
    await b?.close();
  });

  test('a body with every OpenRouter field gets a 200; honoured fields go upstream, the others are warnings', async () => {
    a.setDefault(answer('ok'));
    b.setDefault(answer('ok'));
    const res = await post(EVERY_FIELD);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    const sent = (a.requests.at(-1) ?? b.requests.at(-1))!.json as Json;
    assert.equal(sent.model, 'cheap-model', 'sort by price: the free endpoint first');
    assert.equal(sent.prompt_cache_key, 'conv-1');
    assert.equal(sent.service_tier, 'priority', 'fast is an alias of priority');
    assert.equal(sent.verbosity, 'low');
    assert.deepEqual(sent.metadata, { team: 'a', purpose: 'test' });
    assert.equal(sent.user, 'u'.repeat(300));
    for (const gone of ['plugins', 'debug', 'trace', 'session_id', 'include_reasoning', 'usage', 'transforms', 'provider', 'models', 'route', 'modalities', 'top_a', 'prediction']) assert.equal(sent[gone], undefined, gone);
    assert.deepEqual(sent.tools.map((t: Json) => t.type), ['function'], 'the server tool is removed');
    const rec = await record(res.json.id);
    assert.equal(rec.session, 'session-123', 'session_id is op.session');
    const warnings = rec.detail.warnings as string[];
    for (const w of ['plugins', 'debug', 'trace', 'image_config', 'prediction', 'top_a', 'web_search_options', 'stop_server_tools_when', 'prompt_cache_options', 'transforms', 'tools: server tools', 'unknown fields not sent upstream: safe_prompt']) {
      assert.ok(warnings.some((x) => x.startsWith(w)), `warning for ${w}: ${warnings.join(' | ')}`);
    }
    a.setDefault(undefined);
    b.setDefault(undefined);
  });

  test('null on every nullable field is "not set"', async () => {
    const nulls: Json[] = [
      { provider: null },
      { reasoning: null },
      { reasoning: { effort: null, max_tokens: null, exclude: null, enabled: null, summary: null } },
      { provider: { order: null, only: null, ignore: null, quantizations: null, allow_fallbacks: null, require_parameters: null, data_collection: null, zdr: null, sort: null, max_price: null, preferred_max_latency: null, preferred_min_throughput: null, enforce_distillable_text: null } },
      { models: null, prompt_cache_key: null, service_tier: null, verbosity: null, include_reasoning: null, top_a: null, prediction: null, prompt_cache_options: null, route: null, temperature: null, logprobs: null },
    ];
    for (const extra of nulls) {
      a.enqueue(answer('ok'));
      const res = await post({ model: 'test/model', messages: msgs, provider: { only: ['cheap'] }, ...extra });
      if (extra.provider === null || extra.provider?.only === null) a.enqueue(answer('unused'));
      assert.equal(res.status, 200, `${JSON.stringify(extra)} → ${JSON.stringify(res.json)}`);
    }
    // The spare answers queued for bodies without provider.only went to an upstream or stay queued; clear them.
    a.setDefault(undefined);
    while (a.pendingCount() > 0) await post({ model: 'test/model', messages: msgs, provider: { only: ['cheap'] } });
  });

  test('null inside messages[].reasoning_details[] is "absent" (as OpenRouter sends it back)', async () => {
    const details = [
      { type: 'reasoning.text', text: 'thought', signature: null, id: null, format: null, index: 0 },
      { type: 'reasoning.text', text: null, signature: 'sig==', id: null, format: 'anthropic-claude-v1', index: null },
      { type: 'reasoning.encrypted', data: 'opaque', id: null, format: null },
      { type: 'reasoning.summary', summary: null, text: null, id: null, format: null },
    ];
    a.enqueue(answer('ok'));
    const res = await post({ model: 'test/model', provider: { only: ['cheap'] }, messages: [...msgs, { role: 'assistant', content: '4', reasoning_details: details }, { role: 'user', content: 'and 3+3?' }] });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.choices[0].message.content, 'ok');
    assert.ok(!JSON.stringify(a.requests.at(-1)!.json).includes('null'), JSON.stringify(a.requests.at(-1)!.json));
  });

  test('include_reasoning: false hides reasoning the upstream sends anyway; reasoning.exclude likewise when streamed', async () => {
    a.enqueue(answer('4', { reasoning: 'two plus two' }));
    const res = await post({ model: 'test/model', provider: { only: ['cheap'] }, messages: msgs, include_reasoning: false });
    assert.equal(res.status, 200);
    assert.equal(res.json.choices[0].message.content, '4');
    assert.equal(res.json.choices[0].message.reasoning, undefined);

    a.enqueue({ sse: [JSON.stringify({ choices: [{ index: 0, delta: { reasoning: 'thinking…' } }] }), JSON.stringify({ choices: [{ index: 0, delta: { content: '4' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })] });
    const streamed = await fetch(`${gw.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', provider: { only: ['cheap'] }, messages: msgs, stream: true, reasoning: { effort: 'low', exclude: true } }) }).then((r) => r.text());
    assert.ok(!streamed.includes('thinking'), streamed);
    assert.ok(streamed.includes('"content":"4"'));

    a.enqueue(answer('4', { reasoning: 'two plus two' }));
    const shown = await post({ model: 'test/model', provider: { only: ['cheap'] }, messages: msgs, include_reasoning: true });
    assert.equal(shown.json.choices[0].message.reasoning, 'two plus two');
  });

  test('sticky routing: the same session_id or prompt_cache_key goes back to the endpoint that served it', async () => {
    // Without stickiness, sort by price would always pick "cheap"; the first request is forced to "fast".
    b.enqueue(answer('one'));
    const first = await post({ model: 'test/model', messages: msgs, session_id: 's-sticky', provider: { ignore: ['cheap'] } });
    assert.equal(first.status, 200);
    b.enqueue(answer('two'));
    const second = await post({ model: 'test/model', messages: msgs, session_id: 's-sticky' });
    assert.equal(second.json.choices[0].message.content, 'two');
    assert.equal((await record(second.json.id)).detail.routing_reason, 'sticky');
    b.enqueue(answer('three'));
    await post({ model: 'test/model', messages: msgs, prompt_cache_key: 'pck-1', provider: { ignore: ['cheap'] } });
    b.enqueue(answer('four'));
    const keyed = await post({ model: 'test/model', messages: msgs, prompt_cache_key: 'pck-1' });
    assert.equal(keyed.json.choices[0].message.content, 'four');
    // provider.order turns stickiness off (OpenRouter).
    a.enqueue(answer('ordered'));
    const ordered = await post({ model: 'test/model', messages: msgs, session_id: 's-sticky', provider: { order: ['cheap'] } });
    assert.equal(ordered.json.choices[0].message.content, 'ordered');
  });

  test('variants: :floor and :free pick the free endpoint, :nitro sorts by throughput, an operator variant applies its preferences', async () => {
    a.enqueue(answer('floor'));
    assert.equal((await post({ model: 'test/model:floor', messages: msgs })).json.choices[0].message.content, 'floor');
    a.enqueue(answer('free'));
    const free = await post({ model: 'test/model:free', messages: msgs });
    assert.equal(free.json.model, 'test/model');
    assert.equal(free.json.choices[0].message.content, 'free');
    b.enqueue(answer('pinned'));
    assert.equal((await post({ model: 'test/model:pinned', messages: msgs })).json.choices[0].message.content, 'pinned');
    // `models` entries take variants: test/other has no free endpoint, so :free leaves nothing there.
    const none = await post({ model: 'test/other:free', messages: msgs });
    assert.equal(none.status, 404);
    assert.equal(none.json.error.code, 'no_endpoint_available');
    assert.match(none.json.error.message, /not priced at zero \(:free\)/);
    a.enqueue(answer('fallback-free'));
    const viaModels = await post({ model: 'test/other:free', models: ['test/model:free'], messages: msgs });
    assert.equal(viaModels.json.choices[0].message.content, 'fallback-free');
  });

  test('an unknown variant is a 400 naming the field and the known variants', async () => {
    const res = await post({ model: 'test/model:turbo', messages: msgs });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, 'invalid_request');
    assert.equal(res.json.error.param, 'model');
    assert.match(res.json.error.message, /unknown model variant ":turbo".*nitro, floor, free, pinned/);
    const inModels = await post({ model: 'test/model', models: ['test/other:bogus'], messages: msgs });
    assert.equal(inModels.json.error.param, 'models[0]');
    const chained = await post({ model: 'test/model:nitro:floor', messages: msgs });
    assert.equal(chained.status, 400, JSON.stringify(chained.json));
    assert.equal(chained.json.error.param, 'model');
    assert.match(chained.json.error.message, /unknown model variant ":nitro:floor" of "test\/model" \(known variants: nitro, floor, free, pinned\); variants cannot be chained/);
  });

  test('presets: @preset/<slug> as model, the preset field and model@preset/<slug>; request fields win', async () => {
    b.enqueue(answer('preset'));
    const res = await post({ model: '@preset/careful', messages: msgs });
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.model, 'test/other');
    let sent = b.requests.at(-1)!.json as Json;
    assert.equal(sent.model, 'other-model');
    assert.equal(sent.temperature, 0.1);
    assert.equal(sent.max_completion_tokens ?? sent.max_tokens, 77);
    assert.deepEqual(sent.messages[0], { role: 'system', content: 'Be careful.' });
    const gen = await fetch(`${gw.baseURL}/generation?id=${res.json.id}`, { headers: { authorization: `Bearer ${gw.adminKey}` } }).then((r) => r.json() as Promise<Json>);
    assert.equal(gen.data.preset_id, 'careful');

    b.enqueue(answer('field'));
    await post({ preset: 'careful', messages: msgs, temperature: 0.9 });
    sent = b.requests.at(-1)!.json as Json;
    assert.equal(sent.temperature, 0.9, 'the request value wins');

    b.enqueue(answer('suffix'));
    const suffix = await post({ model: 'test/model@preset/careful', messages: msgs });
    assert.equal(suffix.json.model, 'test/model');
    assert.equal(b.requests.at(-1)!.json && (b.requests.at(-1)!.json as Json).model, 'fast-model', 'the preset provider.order applies');

    const unknown = await post({ model: '@preset/nope', messages: msgs });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.error.param, 'model');
    assert.match(unknown.json.error.message, /no preset "nope" \(known: careful, params-only\)/);
    const noModel = await post({ preset: 'params-only', messages: msgs });
    assert.equal(noModel.status, 400);
    assert.equal(noModel.json.error.param, 'preset');
    const missing = await post({ messages: msgs });
    assert.equal(missing.json.error.param, 'model');
  });

  test('top-level cache_control reaches Anthropic as automatic caching', async () => {
    const up = await startUpstream();
    const anth = await startGateway({
      providers: [{ id: 'claude', kind: 'anthropic', base_url: up.url.replace(/\/v1$/, ''), api_key: 'k' }],
      models: [{ id: 'anthropic/claude', context_length: 200000, endpoints: [{ provider: 'claude', upstream_model: 'claude-sonnet-4-5', pricing: { prompt: 3, completion: 15 }, supported_parameters: ['max_tokens', 'reasoning'] }] }],
    });
    try {
      up.enqueue({ json: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', usage: { input_tokens: 3, output_tokens: 1 } } });
      const res = await fetch(`${anth.baseURL}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${anth.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'anthropic/claude', messages: msgs, cache_control: { type: 'ephemeral', ttl: '1h' } }) });
      assert.equal(res.status, 200);
      assert.deepEqual((up.requests.at(-1)!.json as Json).cache_control, { type: 'ephemeral', ttl: '1h' });
    } finally {
      await anth.close();
      await up.close();
    }
  });
});

describe('OpenRouter routing units', () => {
  const cfg = parseConfig(
    {
      providers: [
        { id: 'p1', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' },
        { id: 'p2', kind: 'openai', base_url: 'http://127.0.0.1:2/v1' },
      ],
      models: [
        { id: 'a/one', context_length: 8192, endpoints: [{ provider: 'p1', upstream_model: 'one', pricing: { prompt: 1, completion: 1 } }, { provider: 'p2', upstream_model: 'one', pricing: { prompt: 2, completion: 2 } }] },
        { id: 'a/two', context_length: 8192, endpoints: [{ provider: 'p2', upstream_model: 'two', pricing: { prompt: 0.5, completion: 0.5 } }] },
      ],
    },
    'units',
  );
  const catalog = buildCatalog(cfg);
  const req = (body: Json): ChatRequest => {
    const r = parseChatRequest({ messages: msgs, ...body });
    resolveModelNames(r, catalog, cfg);
    return r;
  };

  test('preferred_max_latency and preferred_min_throughput deprioritise, never exclude', () => {
    let t = 0;
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 1000, windowMs: 60 * 60_000, recentFailureMs: 0 }, () => t);
    // p1: 3 s to first token, 10 tok/s; p2: 0.2 s, 100 tok/s.
    health.recordSuccess('p1/one', { latencyMs: 3000 + 10_000, ttftMs: 3000, outputTokens: 100 });
    health.recordSuccess('p2/one', { latencyMs: 200 + 1000, ttftMs: 200, outputTokens: 100 });
    t = 1;
    const ctx = { catalog, health, random: () => 0 };
    const plain = planRoute(req({ model: 'a/one', provider: { sort: 'price' } }), ctx, 10);
    assert.deepEqual(plain.endpoints.map((p) => p.target.id), ['p1/one', 'p2/one']);
    const latency = planRoute(req({ model: 'a/one', provider: { sort: 'price', preferred_max_latency: 1 } }), ctx, 10);
    assert.deepEqual(latency.endpoints.map((p) => `${p.target.id} ${p.reason}`), ['p2/one sort:price', 'p1/one sort:price:below-preferred-performance']);
    const throughput = planRoute(req({ model: 'a/one', provider: { sort: 'price', preferred_min_throughput: { p50: 50 } } }), ctx, 10);
    assert.deepEqual(throughput.endpoints.map((p) => p.target.id), ['p2/one', 'p1/one']);
    const nitro = planRoute(req({ model: 'a/one:nitro' }), ctx, 10);
    assert.deepEqual(nitro.endpoints.map((p) => `${p.target.id} ${p.reason}`), ['p2/one sort:throughput', 'p1/one sort:throughput'], ':nitro sorts by throughput');
    const floor = planRoute(req({ model: 'a/one:floor' }), ctx, 10);
    assert.deepEqual(floor.endpoints.map((p) => p.target.id), ['p1/one', 'p2/one'], ':floor sorts by price');
    const own = planRoute(req({ model: 'a/one:nitro', provider: { sort: 'price' } }), ctx, 10);
    assert.deepEqual(own.endpoints.map((p) => p.target.id), ['p1/one', 'p2/one'], 'the request\'s own sort wins over the variant');
    assert.equal(meetsPerformance(health.stats('p1/one'), { p50: 3 }, undefined), true, '3 s at p50 meets a 3 s cutoff');
    assert.equal(meetsPerformance({ latency_last_30m: null, throughput_last_30m: null }, { p50: 0.001 }, { p99: 1e9 }), true, 'no samples: nothing against it');
  });

  test('sort {by, partition: "none"} orders endpoints across models; the default keeps models apart', () => {
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 1000, windowMs: 60_000, recentFailureMs: 0 });
    const ctx = { catalog, health, random: () => 0 };
    const byModel = planRoute(req({ model: 'a/one', models: ['a/two'], provider: { sort: { by: 'price' } } }), ctx, 10);
    assert.deepEqual(byModel.endpoints.map((p) => p.target.id), ['p1/one', 'p2/one', 'p2/two']);
    const across = planRoute(req({ model: 'a/one', models: ['a/two'], provider: { sort: { by: 'price', partition: 'none' } } }), ctx, 10);
    assert.deepEqual(across.endpoints.map((p) => p.target.id), ['p2/two', 'p1/one', 'p2/one']);
    const route = planRoute(req({ model: 'a/one', models: ['a/two'], route: 'sort', provider: { sort: 'price' } }), ctx, 10);
    assert.deepEqual(route.endpoints.map((p) => p.target.id), ['p2/two', 'p1/one', 'p2/one'], 'route: sort is partition none');
  });

  test('max_price accepts numbers and strings (USD per 1M tokens)', () => {
    const health = new HealthRegistry({ failureThreshold: 5, openMs: 1000, windowMs: 60_000, recentFailureMs: 0 });
    const plan = planRoute(req({ model: 'a/one', provider: { max_price: { prompt: '1.5', completion: 1.5 } } }), { catalog, health, random: () => 0 }, 10);
    assert.deepEqual(plan.endpoints.map((p) => p.target.id), ['p1/one']);
    assert.equal(plan.excluded[0]!.reason, 'max_price');
  });

  test('config: presets naming unknown models, duplicate slugs and redefined built-in variants are reported together', () => {
    assert.throws(
      () =>
        parseConfig(
          {
            providers: [{ id: 'p1', kind: 'openai', base_url: 'http://127.0.0.1:1/v1' }],
            models: [{ id: 'a/one', context_length: 8192, endpoints: [{ provider: 'p1', upstream_model: 'one' }] }],
            presets: [{ slug: 'x', models: ['a/one:free', 'a/nope'] }, { slug: 'x' }],
            model_variants: [{ name: 'nitro', provider: { sort: 'price' } }],
          },
          'bad presets',
        ),
      (err: Error) => {
        assert.match(err.message, /presets\[0\]\.models\[1\]: unknown model "a\/nope"/);
        assert.match(err.message, /presets\[1\]\.slug: duplicate preset "x"/);
        assert.match(err.message, /model_variants\[0\]\.name: nitro, floor and free are built-in variants/);
        return true;
      },
    );
  });

  test('bad values are still a 400 with param', () => {
    const bad = (body: Json) => {
      try {
        parseChatRequest({ model: 'a/one', messages: msgs, ...body });
      } catch (err) {
        return (err as GatewayError).param;
      }
      return 'accepted';
    };
    assert.equal(bad({ provider: { sort: 'fastest' } }), 'provider.sort');
    assert.equal(bad({ provider: { max_price: { prompt: 'cheap' } } }), 'provider.max_price.prompt');
    assert.equal(bad({ reasoning: { summary: 'long' } }), 'reasoning.summary');
    assert.equal(bad({ service_tier: 'gold' }), 'service_tier');
    assert.equal(bad({ metadata: { k: 'v'.repeat(513) } }), 'metadata.k');
    assert.equal(bad({ session_id: 's'.repeat(257) }), 'session_id');
  });
});
