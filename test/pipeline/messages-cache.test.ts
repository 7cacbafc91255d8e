/**
 * The exact response cache on the Messages pass-through lane (Messages → an `anthropic`
 * endpoint): a hit replays what the client got live — the upstream's own events byte for byte,
 * or its body — not a re-encoding of the internal result; a hit whose `stream` differs from the
 * live request gets the same answer in the other form. Live and hit are compared with raw HTTP
 * and with `@anthropic-ai/sdk`, against an upstream on port 0 replaying recorded Anthropic
 * answers (a thinking block with its signature, server tools). Also the body ↔ events
 * conversion itself over every recorded Anthropic stream.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { encodePieces, fixturesAvailable, fixturesDir, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { cacheKey, cacheScope } from '../../src/cache/cache-key.js';
import { eventsFromMessage, messageFromEvents } from '../../src/ingress/anthropic/messages/relayed-message.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const skip = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';

/** The SSE bytes the upstream sends for recorded payloads (what the pass-through lane relays). */
const anthropicBytes = (sse: string[]) => Buffer.concat(encodePieces({ sse, framing: 'anthropic' })).toString('utf8');

/** A message the SDK returned as plain JSON, without the `parsed_output` member the SDK adds itself. */
const wire = (m: unknown): Json => {
  const { parsed_output: _p, ...rest } = JSON.parse(JSON.stringify(m)) as Json;
  return rest;
};

describe('response cache × Messages pass-through lane', { skip }, () => {
  let anth: Upstream;
  let gw: TestGateway;
  let secret: string;
  let keyId: string;
  let client: Anthropic;
  let n = 0;
  /** A request body no other test uses, asking for the cache. */
  const fresh = (extra: Json = {}): Json => ({
    model: 'claude-cache-test', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [{ role: 'user', content: `What is 925 / 5? (${++n})` }], op: { cache: true }, ...extra,
  });

  before(async () => {
    anth = await startUpstream();
    gw = await startGateway({
      retention: 7,
      server: { keepalive_interval_ms: 0 },
      providers: [{ id: 'anth', kind: 'anthropic', base_url: anth.url, api_key: 'sk-ant-upstream' }],
      models: [{ id: 'anthropic/claude-sonnet-4.5', context_length: 200000, aliases: ['claude-cache-test'], endpoints: [{ provider: 'anth', upstream_model: 'claude-sonnet-4-5-20250929', pricing: { prompt: 3, completion: 15 } }] }],
    });
    ({ secret, id: keyId } = await gw.createKey('cache'));
    client = new Anthropic({ baseURL: gw.origin, apiKey: secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await anth?.close();
  });

  const post = (body: Json) =>
    fetch(`${gw.origin}/v1/messages`, { method: 'POST', headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify(body) });
  /**
   * Wait until the answer of the last miss is in the cache (it is stored after the response),
   * by reading the cache store itself — a request sent before the entry lands would be a miss
   * and go upstream — then ask for it.
   */
  const stored = async (body: Json) => {
    const entryKey = cacheKey(cacheScope(keyId, []), 'messages', { ...body, op: { cache: true } });
    for (let i = 0; i < 250; i++) {
      if ((await gw.gateway.runtime().cache.get(entryKey)) !== null) {
        const res = await post({ ...body, op: { cache: true } });
        assert.equal(res.headers.get('x-op-cache'), 'HIT');
        return res;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the answer was not stored within 5 s');
  };
  const record = async (id: string | null) => {
    await gw.flush();
    return gw.store.db.selectFrom('generations').selectAll().where('id', '=', id!).executeTakeFirstOrThrow();
  };

  test('streamed live, streamed hit: the same bytes; the SDK sees the signature; a non-streamed hit is the same message', async () => {
    const sse = loadChunks('anthropic/anthropic-clear-thinking.1.chunks.txt');
    const recordedSignature = sse.map((l) => JSON.parse(l) as Json).filter((e) => e.delta?.type === 'signature_delta').map((e) => e.delta.signature).join('');
    anth.enqueue({ sse, framing: 'anthropic' });
    const body = fresh({ stream: true });

    const live = await post(body);
    assert.equal(live.headers.get('x-op-cache'), 'MISS');
    const liveText = await live.text();
    assert.equal(liveText, anthropicBytes(sse), 'pass-through: the upstream events as sent');

    const hit = await stored(body);
    assert.equal(hit.headers.get('content-type')?.startsWith('text/event-stream'), true);
    assert.equal(await hit.text(), liveText, 'the hit replays the live bytes');
    assert.equal(anth.requests.length, 1, 'one upstream call');
    const rec = await record(hit.headers.get('x-op-generation-id'));
    assert.deepEqual([rec.api, rec.streamed, Number(rec.cost_pico), JSON.parse(rec.detail).cache_hit], ['messages', 1, 0, true]);

    // The SDK, streamed: the thinking block's signature survives the hit.
    const { model: _m, op: _op, stream: _s, ...params } = body;
    const streamed = await client.messages
      .stream({ ...params, model: 'claude-cache-test', op: { cache: true } } as unknown as Anthropic.MessageStreamParams)
      .withResponse();
    assert.equal(streamed.response.headers.get('x-op-cache'), 'HIT');
    const message = await streamed.data.finalMessage();
    const thinking = message.content.find((b) => b.type === 'thinking') as Anthropic.ThinkingBlock;
    assert.equal(thinking.signature, recordedSignature);
    assert.equal(message.id, (JSON.parse(sse[0]!) as Json).message.id, "the upstream's message id, as live");

    // The SDK, not streamed: the message the stream adds up to (plus context_management, which the SDK's stream accumulator skips).
    const complete = await client.messages.create({ ...params, model: 'claude-cache-test', op: { cache: true } } as unknown as Anthropic.MessageCreateParamsNonStreaming).withResponse();
    assert.equal(complete.response.headers.get('x-op-cache'), 'HIT');
    const { context_management: cm, ...rest } = wire(complete.data);
    assert.deepEqual(cm, { applied_edits: [] });
    assert.deepEqual(rest, wire(message));
    assert.deepEqual(wire(complete.data), messageFromEvents(liveText));
    assert.equal(anth.requests.length, 1);
  });

  test('non-streamed live, non-streamed hit: the same body; a streamed hit carries it as events', async () => {
    const recorded = loadJson('anthropic/anthropic-clear-thinking.1.json') as Json;
    anth.enqueue({ json: recorded });
    const body = fresh();
    const { op: _op, ...params } = body;

    const live = await client.messages.create({ ...params, op: { cache: true } } as unknown as Anthropic.MessageCreateParamsNonStreaming).withResponse();
    assert.equal(live.response.headers.get('x-op-cache'), 'MISS');
    assert.deepEqual(wire(live.data), recorded, 'pass-through: the upstream body as sent');

    const hit = await stored(body);
    assert.deepEqual(await hit.json(), recorded, 'the hit is the live body');
    const sdkHit = await client.messages.create({ ...params, op: { cache: true } } as unknown as Anthropic.MessageCreateParamsNonStreaming);
    assert.equal((sdkHit.content[0] as Anthropic.ThinkingBlock).signature, recorded.content[0].signature);

    // Streamed: the body as Anthropic's events, which add up to the body again.
    const raw = await post({ ...body, stream: true });
    assert.equal(raw.headers.get('x-op-cache'), 'HIT');
    const text = await raw.text();
    assert.deepEqual(text.split('\n').filter((l) => l.startsWith('event: ')), [
      'event: message_start', 'event: content_block_start', 'event: content_block_delta', 'event: content_block_delta', 'event: content_block_stop',
      'event: content_block_start', 'event: content_block_delta', 'event: content_block_stop', 'event: message_delta', 'event: message_stop',
    ]);
    assert.deepEqual(messageFromEvents(text), recorded);
    const streamed = await client.messages.stream({ ...params, op: { cache: true } } as unknown as Anthropic.MessageStreamParams).finalMessage();
    const { context_management: _cm, ...withoutCm } = recorded;
    assert.deepEqual(wire(streamed), withoutCm);
    assert.equal(anth.requests.length, 2, 'one upstream call per test');
  });

  test('server tools and their result blocks survive a hit in both forms', async () => {
    const sse = loadChunks('anthropic/anthropic-code-execution-20250825.1.chunks.txt');
    anth.enqueue({ sse, framing: 'anthropic' });
    const body = fresh({ stream: true, thinking: undefined });
    const liveText = await (await post(body)).text();
    const hit = await stored(body);
    assert.equal(await hit.text(), liveText);
    const complete = (await (await post({ ...body, stream: false })).json()) as Json;
    assert.deepEqual(complete, messageFromEvents(liveText) as Json);
    assert.deepEqual(complete.content.map((b: Json) => b.type), (messageFromEvents(anthropicBytes(sse)) as Json).content.map((b: Json) => b.type));
    assert.ok(complete.content.some((b: Json) => b.type === 'server_tool_use' && typeof b.input === 'object' && Object.keys(b.input).length > 0));
  });

  test('an entry without a relayed form (a translated answer, or one an older version stored) replays from the internal result', async () => {
    anth.enqueue({ json: { id: 'msg_t1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [{ type: 'text', text: 'Plain.' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 2 } } });
    const body = fresh({ thinking: undefined });
    assert.equal((await post(body)).headers.get('x-op-cache'), 'MISS');
    await stored(body);
    const rt = gw.gateway.runtime();
    const entryKey = cacheKey(cacheScope(keyId, []), 'messages', body);
    const entry = JSON.parse((await rt.cache.get(entryKey))!) as Json;
    assert.deepEqual(entry.relayed.body.content, [{ type: 'text', text: 'Plain.' }]);
    delete entry.relayed;
    await rt.cache.set(entryKey, JSON.stringify(entry), 60_000);
    const res = (await (await post(body)).json()) as Json;
    assert.match(res.id, /^gen_/, 'encoded by the gateway: its own id');
    assert.deepEqual(res.content, [{ type: 'text', text: 'Plain.' }]);
  });
});

describe('Messages body ↔ events (relayed-message.ts)', { skip }, () => {
  const dir = path.join(fixturesDir, 'anthropic');
  const streams = skip ? [] : readdirSync(dir).filter((f) => f.endsWith('.chunks.txt'));

  test('every recorded stream: the message it adds up to survives events → body → events → body', () => {
    let checked = 0;
    for (const file of streams) {
      const lines = loadChunks(`anthropic/${file}`);
      const types = lines.map((l) => { try { return (JSON.parse(l) as Json).type; } catch { return undefined; } });
      if (!types.includes('message_start') || types.includes('error') || lines.some((l) => !l.startsWith('{'))) continue;
      const message = messageFromEvents(anthropicBytes(lines));
      assert.deepEqual(messageFromEvents(eventsFromMessage(message)), message, file);
      checked++;
    }
    assert.ok(checked >= 20, `${checked} recorded streams checked`);
  });

  test('a recorded stream adds up to the blocks Anthropic streamed: thinking with its signature, tool input parsed', () => {
    const m: Json = messageFromEvents(anthropicBytes(loadChunks('anthropic/anthropic-clear-thinking.1.chunks.txt')));
    assert.equal(m.content[0].type, 'thinking');
    assert.match(m.content[0].signature, /^[A-Za-z0-9+/=]{40,}$/);
    assert.equal(m.stop_reason, 'end_turn');
    assert.deepEqual(m.context_management, { applied_edits: [] });
    const tools: Json = messageFromEvents(anthropicBytes(loadChunks('anthropic/anthropic-json-tool.1.chunks.txt')));
    const use = tools.content.find((b: Json) => b.type === 'tool_use');
    assert.equal(typeof use.input, 'object');
    assert.ok(Object.keys(use.input).length > 0);
  });
});
