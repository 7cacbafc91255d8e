/**
 * `POST /v1/messages` and `/v1/messages/count_tokens` (Anthropic's Messages API) with the official
 * `@anthropic-ai/sdk` and the Vercel AI SDK's `@ai-sdk/anthropic`, against upstreams on port 0:
 * an `anthropic` one replaying ../shared/fixtures/recorded/anthropic (the pass-through lane) and
 * an `openai` one (translation). Every stream is checked event by event against
 * helpers/anthropic-schema.ts, every body against its message schema.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText } from 'ai';
import { encodePieces, fixturesAvailable, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { parseConfig } from '../../src/config/load.js';
import { convertMessagesToChat } from '../../src/ingress/anthropic/messages/convert-messages-to-chat.js';
import { parseMessagesRequest } from '../../src/ingress/anthropic/messages/messages-request-schema.js';
import { errorBodySchema, messageSchema, parseAnthropicStream } from '../helpers/anthropic-schema.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const skip = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';
const BETA = 'claude-code-20250219,interleaved-thinking-2025-05-14';

const endpoint = (provider: string, upstream: string, extra: Json = {}) => ({
  provider, upstream_model: upstream, pricing: { prompt: 3, completion: 15 },
  supported_parameters: ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'tools', 'tool_choice', 'reasoning'], ...extra,
});

function config(anth: Upstream, oai: Upstream, gem: Upstream) {
  return {
    retention: 7,
    server: { keepalive_interval_ms: 40 },
    providers: [
      { id: 'anth', kind: 'anthropic', base_url: anth.url, api_key: 'sk-ant-upstream' },
      { id: 'oai', kind: 'openai', base_url: oai.url, api_key: 'sk-oai-upstream' },
      { id: 'gem', kind: 'gemini', base_url: new URL(gem.url).origin, api_key: 'gem-key' },
    ],
    models: [
      { id: 'anthropic/claude-sonnet-4.5', name: 'Claude Sonnet 4.5', context_length: 200000, aliases: ['claude-sonnet-4-5'], endpoints: [endpoint('anth', 'claude-sonnet-4-5-20250929', { max_completion_tokens: 64000 })] },
      { id: 'openai/gpt-test', name: 'GPT test', context_length: 128000, architecture: { input_modalities: ['text', 'image'] }, endpoints: [endpoint('oai', 'gpt-up')] },
      { id: 'google/gemini-test', context_length: 1000000, endpoints: [endpoint('gem', 'gemini-up')] },
      { id: 'anthropic/claude-fallback', context_length: 200000, endpoints: [endpoint('anth', 'claude-down'), endpoint('oai', 'gpt-backup', { pricing: { prompt: 30, completion: 60 } })] },
    ],
  };
}

/** The upstream's SSE bytes for recorded payloads (what pass-through must hand on unchanged). */
const anthropicBytes = (sse: string[]) => Buffer.concat(encodePieces({ sse, framing: 'anthropic' })).toString('utf8');

const openaiChunk = (delta: Json, finish: string | null = null, usage?: Json) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) });

describe('Anthropic Messages ingress', { skip }, () => {
  let gw: TestGateway;
  let anth: Upstream;
  let oai: Upstream;
  let gem: Upstream;
  let secret: string;
  let client: Anthropic;

  before(async () => {
    anth = await startUpstream();
    oai = await startUpstream();
    gem = await startUpstream();
    gw = await startGateway(config(anth, oai, gem));
    secret = (await gw.createKey('messages')).secret;
    client = new Anthropic({ apiKey: secret, baseURL: gw.origin, maxRetries: 0, defaultHeaders: { 'anthropic-beta': BETA } });
  });
  after(async () => {
    await gw.close();
    await anth.close();
    await oai.close();
    await gem.close();
  });
  afterEach(() => {
    anth.requests.length = 0;
    oai.requests.length = 0;
    gem.requests.length = 0;
  });

  const lastRecord = () => lastGeneration(gw);

  /** The record of one request, once the gateway has finished it (a cancelled stream finishes after the abort). */
  async function recordOf(requestId: string): Promise<Json> {
    for (let i = 0; ; i++) {
      await gw.flush();
      const row = await gw.store.db.selectFrom('generations').selectAll().where('request_id', '=', requestId).executeTakeFirst();
      if (row || i === 100) return row as Json;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async function rawStream(body: Json, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
    const res = await fetch(`${gw.origin}/v1/messages?beta=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': secret, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify({ ...body, stream: true }),
    });
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  test('create, native: the upstream body comes back, betas and version forwarded, model renamed, gateway fields removed', async () => {
    const recorded = loadJson('anthropic/anthropic-text.json') as Json;
    anth.enqueue({ json: recorded });
    const msg = await client.messages.create({
      model: 'claude-sonnet-4-5', max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hello, how are you?' }],
      op: { tags: ['cc'] },
    } as Anthropic.MessageCreateParamsNonStreaming);
    messageSchema.parse(msg);
    assert.deepEqual(msg, recorded);
    const sent = anth.requests[0]!;
    assert.equal(sent.path, '/v1/messages');
    assert.equal(sent.headers['anthropic-beta'], BETA);
    // The SDK's own version, not the gateway's default 2023-06-01.
    assert.equal(sent.headers['anthropic-version'], '2026-10-21');
    assert.equal(sent.headers['x-api-key'], 'sk-ant-upstream');
    const body = sent.json as Json;
    assert.equal(body.model, 'claude-sonnet-4-5-20250929');
    assert.deepEqual(body.system, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
    assert.equal('op' in body, false);
    assert.equal('stream' in body, false);
    const rec = await lastRecord();
    assert.equal(rec.api, 'messages');
    assert.equal(rec.served_model, 'anthropic/claude-sonnet-4.5');
    assert.equal(rec.prompt_tokens, 12);
    assert.equal(rec.completion_tokens, 29);
    assert.equal(rec.tags, JSON.stringify(['cc']));
    assert.match(String(rec.content), /Hello, how are you\?/);
  });

  test('stream, native: the client receives the upstream event bytes unchanged, usage recorded', async () => {
    const sse = loadChunks('anthropic/anthropic-text.chunks.txt');
    anth.enqueue({ sse, framing: 'anthropic' });
    const res = await rawStream({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(res.status, 200);
    // Our own pings may come first (keep-alive while waiting); then the upstream's bytes as sent.
    assert.equal(res.text.replace(/^(event: ping\ndata: \{"type":"ping"\}\n\n)*/, ''), anthropicBytes(sse));
    parseAnthropicStream(res.text);
    const rec = await lastRecord();
    assert.equal(rec.api, 'messages');
    assert.equal(rec.streamed, 1);
    assert.equal(rec.finish_reason, 'stop');
    assert.equal(rec.native_finish_reason, 'end_turn');
    assert.equal(rec.completion_tokens, 30);
  });

  test('stream asked, the anthropic upstream answers one JSON body: the client still gets a valid event stream', async () => {
    const recorded = loadJson('anthropic/anthropic-text.json') as Json;
    anth.enqueue({ json: recorded });
    const res = await rawStream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    const events = parseAnthropicStream(res.text) as Json[];
    assert.equal(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta.text).join(''), recorded.content[0].text);
    assert.equal(events.find((e) => e.type === 'message_delta')!.delta.stop_reason, 'end_turn');
  });

  test('stream with the SDK, native, ?beta=true: text and final message', async () => {
    anth.enqueue({ sse: loadChunks('anthropic/anthropic-text.chunks.txt'), framing: 'anthropic' });
    const stream = client.beta.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    assert.equal(text, "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?");
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.usage.output_tokens, 30);
    assert.equal(anth.requests[0]!.path, '/v1/messages');
  });

  test('thinking with signatures across two turns, native: the signature goes back byte for byte', async () => {
    const sse = loadChunks('anthropic/anthropic-clear-thinking.1.chunks.txt');
    anth.enqueue({ sse, framing: 'anthropic' });
    const first = await client.messages
      .stream({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'What is 925 / 5?' }] })
      .finalMessage();
    const thinking = first.content.find((b) => b.type === 'thinking') as Anthropic.ThinkingBlock;
    const expectedSig = sse.map((l) => JSON.parse(l) as Json).filter((e) => e.delta?.type === 'signature_delta').map((e) => e.delta.signature).join('');
    assert.ok(expectedSig.length > 20);
    assert.equal(thinking.signature, expectedSig);
    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.messages.create({
      model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'What is 925 / 5?' }, { role: 'assistant', content: first.content }, { role: 'user', content: 'Thanks' }],
    });
    const sent = anth.requests[1]!.json as Json;
    assert.deepEqual(sent.messages[1].content[0], { type: 'thinking', thinking: thinking.thinking, signature: expectedSig });
  });

  test('tiny thinking budgets are raised to 1024 and recorded as a warning', async () => {
    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 4000, thinking: { type: 'enabled', budget_tokens: 500 }, messages: [{ role: 'user', content: 'Hi' }] });
    assert.deepEqual((anth.requests[0]!.json as Json).thinking, { type: 'enabled', budget_tokens: 1024 });
    const rec = await lastRecord();
    assert.deepEqual(rec.detail.warnings, ["thinking.budget_tokens 500 raised to Anthropic's minimum 1024"]);
  });

  test('tools round trip, native: tool_use streamed with input_json_delta, the tool_result goes upstream as sent', async () => {
    const sse = loadChunks('anthropic/anthropic-json-other-tool.1.chunks.txt');
    anth.enqueue({ sse, framing: 'anthropic' });
    const tools: Anthropic.Tool[] = [{ name: 'weather', description: 'Weather of a place', input_schema: { type: 'object', properties: { location: { type: 'string' } } } }];
    const first = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 500, tools, messages: [{ role: 'user', content: 'Weather in SF?' }] }).finalMessage();
    const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    assert.deepEqual(use.input, { location: 'San Francisco' });
    assert.equal(first.stop_reason, 'tool_use');
    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.messages.create({
      model: 'claude-sonnet-4-5', max_tokens: 500, tools,
      messages: [
        { role: 'user', content: 'Weather in SF?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 18 C' }] },
      ],
    });
    assert.deepEqual((anth.requests[1]!.json as Json).messages[2].content, [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 18 C' }]);
  });

  test('tools round trip by translation to an openai upstream: events, stop reason, tool result as a tool message', async () => {
    oai.enqueue({
      sse: [
        openaiChunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }] }),
        openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '{"location":' } }] }),
        openaiChunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        openaiChunk({}, 'tool_calls'),
        JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [], usage: { prompt_tokens: 50, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 20 } } }),
      ],
    });
    const tools = [{ name: 'weather', input_schema: { type: 'object' as const, properties: { location: { type: 'string' } } } }];
    const res = await rawStream({ model: 'openai/gpt-test', max_tokens: 300, tools, tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Weather in Paris?' }] });
    const events = parseAnthropicStream(res.text);
    const types = events.filter((e) => e.type !== 'ping').map((e) => e.type);
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.deepEqual((events.find((e) => e.type === 'content_block_start') as Json).content_block, { type: 'tool_use', id: 'call_1', name: 'weather', input: {} });
    // The argument pieces stream as they come.
    assert.deepEqual(events.filter((e) => e.type === 'content_block_delta').map((e) => (e as Json).delta), [
      { type: 'input_json_delta', partial_json: '{"location":' },
      { type: 'input_json_delta', partial_json: '"Paris"}' },
    ]);
    const md = events.find((e) => e.type === 'message_delta') as Json;
    assert.deepEqual(md.delta, { stop_reason: 'tool_use', stop_sequence: null });
    assert.deepEqual(md.usage, { input_tokens: 30, output_tokens: 9, cache_creation_input_tokens: null, cache_read_input_tokens: 20 });
    // A ping may come first when the upstream takes longer than keepalive_interval_ms (40 ms here).
    const start = events.find((e) => e.type === 'message_start') as Json;
    assert.ok(start.message.usage.input_tokens > 0, 'message_start carries the input estimate');
    const up = oai.requests[0]!.json as Json;
    assert.equal(up.model, 'gpt-up');
    assert.equal(up.tool_choice, 'required');
    assert.deepEqual(up.tools[0].function, { name: 'weather', parameters: tools[0]!.input_schema });
    assert.equal(up.max_completion_tokens, 300);

    oai.enqueue({ json: { id: 'c2', object: 'chat.completion', created: 1, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content: 'It is sunny.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 70, completion_tokens: 4 } } });
    const second = await client.messages.create({
      model: 'openai/gpt-test', max_tokens: 300, tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { location: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] }, { type: 'text', text: 'So?' }] },
      ],
    });
    messageSchema.parse(second);
    assert.deepEqual(second.content, [{ type: 'text', text: 'It is sunny.' }]);
    assert.equal(second.stop_reason, 'end_turn');
    assert.deepEqual(second.usage, { input_tokens: 70, output_tokens: 4, cache_creation_input_tokens: null, cache_read_input_tokens: null });
    const msgs = (oai.requests[1]!.json as Json).messages as Json[];
    assert.deepEqual(msgs[1], { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"location":"Paris"}' } }] });
    assert.deepEqual(msgs[2], { role: 'tool', tool_call_id: 'call_1', content: 'sunny' });
    assert.deepEqual(msgs[3], { role: 'user', content: 'So?' });
  });

  test('translation: reasoning becomes an unsigned thinking block; images map; losses are warnings in the record', async () => {
    oai.enqueue({
      sse: [
        openaiChunk({ role: 'assistant', reasoning: 'Let me think.' }),
        openaiChunk({ content: 'A cat.' }),
        openaiChunk({}, 'stop', { prompt_tokens: 10, completion_tokens: 5 }),
      ],
    });
    const res = await rawStream({
      model: 'openai/gpt-test', max_tokens: 300,
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' }, cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'What is it?' }] }],
    });
    const events = parseAnthropicStream(res.text);
    const starts = events.filter((e) => e.type === 'content_block_start').map((e) => (e as Json).content_block);
    assert.deepEqual(starts, [{ type: 'thinking', thinking: '', signature: '' }, { type: 'text', text: '' }]);
    assert.equal(events.some((e) => e.type === 'content_block_delta' && e.delta.type === 'signature_delta'), false, 'no fabricated signature');
    const up = oai.requests[0]!.json as Json;
    assert.deepEqual(up.messages[0].content[0], { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } });
    assert.equal(up.tools, undefined);
    const rec = await lastRecord();
    assert.deepEqual(rec.detail.warnings, [
      'messages[0].content[0]: cache_control on a image block left out',
      'tool "web_search" (web_search_20250305) left out: server tools run only on Anthropic',
    ]);
    // The unsigned thinking block goes back to an anthropic endpoint without it.
    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.messages.create({
      model: 'claude-sonnet-4-5', max_tokens: 300,
      messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'Let me think.', signature: '' }, { type: 'text', text: 'A cat.' }] }, { role: 'user', content: 'More' }],
    });
    assert.deepEqual((anth.requests[0]!.json as Json).messages[1].content, [{ type: 'text', text: 'A cat.' }]);
    assert.match((await lastRecord()).detail.warnings[0], /1 unsigned thinking block\(s\) left out/);
  });

  test('translation to a gemini upstream: thinking, a tool call with its input, stop reason and usage', async () => {
    gem.enqueue({
      framing: 'gemini',
      sse: [
        JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'Weather needs a tool.', thought: true }] } }] }),
        JSON.stringify({
          candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'weather', args: { location: 'Rome' } }, thoughtSignature: 'c2lnbmF0dXJl' }] }, finishReason: 'STOP' }],
          usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, thoughtsTokenCount: 3, totalTokenCount: 28 },
        }),
      ],
    });
    const res = await rawStream({ model: 'google/gemini-test', max_tokens: 300, tools: [{ name: 'weather', input_schema: { type: 'object', properties: { location: { type: 'string' } } } }], messages: [{ role: 'user', content: 'Weather in Rome?' }] });
    const events = parseAnthropicStream(res.text).filter((e) => e.type !== 'ping') as Json[];
    assert.deepEqual(events.filter((e) => e.type === 'content_block_start').map((e) => [e.index, e.content_block.type]), [[0, 'thinking'], [1, 'tool_use']]);
    assert.deepEqual(events.filter((e) => e.type === 'content_block_delta').map((e) => e.delta), [
      { type: 'thinking_delta', thinking: 'Weather needs a tool.' },
      { type: 'input_json_delta', partial_json: '{"location":"Rome"}' },
    ]);
    const md = events.find((e) => e.type === 'message_delta')!;
    assert.equal(md.delta.stop_reason, 'tool_use');
    assert.deepEqual(md.usage, { input_tokens: 20, output_tokens: 8, cache_creation_input_tokens: null, cache_read_input_tokens: null });
    assert.match(gem.requests[0]!.path, /gemini-up:streamGenerateContent/);
  });

  test('fallback from a failing anthropic endpoint to an openai one, one record with both attempts', async () => {
    anth.enqueue({ status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    oai.enqueue({ sse: [openaiChunk({ role: 'assistant', content: 'Backup here.' }), openaiChunk({}, 'stop', { prompt_tokens: 8, completion_tokens: 3 })] });
    // provider.order: without it the two endpoints are shuffled by price weight, and the dearer one comes first now and then.
    const final = await client.messages.stream({ model: 'anthropic/claude-fallback', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }], provider: { order: ['anth', 'oai'] } } as unknown as Anthropic.MessageStreamParams).finalMessage();
    assert.deepEqual(final.content, [{ type: 'text', text: 'Backup here.' }]);
    const rec = await lastRecord();
    assert.equal(rec.api, 'messages');
    assert.equal(rec.provider, 'oai');
    assert.deepEqual(rec.detail.attempts.map((a: Json) => [a.endpoint, a.error_code]), [['anth/claude-down', 'upstream_overloaded'], ['oai/gpt-backup', null]]);
  });

  test('ping events while waiting for the first content', async () => {
    oai.enqueue({ delayBeforeHeadersMs: 150, sse: [openaiChunk({ role: 'assistant', content: 'ok' }), openaiChunk({}, 'stop', { prompt_tokens: 1, completion_tokens: 1 })] });
    const res = await rawStream({ model: 'openai/gpt-test', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] });
    const events = parseAnthropicStream(res.text);
    assert.equal(events[0]!.type, 'ping');
    assert.equal(res.text.includes(': keep-alive'), false);
  });

  test('a stream cut after its first content ends with event: error in Anthropic\'s envelope, code kept', async () => {
    const sse = loadChunks('anthropic/anthropic-text.chunks.txt').slice(0, 5);
    anth.enqueue({ sse, framing: 'anthropic' });
    const res = await rawStream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    const events = parseAnthropicStream(res.text);
    const last = events.at(-1) as Json;
    assert.equal(last.type, 'error');
    assert.equal(last.error.type, 'api_error');
    assert.equal(last.error.code, 'upstream_connection_failed');
    assert.equal((await lastRecord()).error_code, 'upstream_connection_failed');
  });

  test('errors are the SDK\'s typed errors with Anthropic\'s envelope', async () => {
    const bad = new Anthropic({ apiKey: 'sk-nope', baseURL: gw.origin, maxRetries: 0 });
    const auth = await bad.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(auth instanceof Anthropic.AuthenticationError);
    errorBodySchema.parse(auth.error);
    assert.deepEqual((auth.error as Json).error, { type: 'authentication_error', message: 'the API key is not valid', code: 'invalid_api_key' });

    const invalid = await client.messages.create({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    assert.ok(invalid instanceof Anthropic.BadRequestError);
    assert.deepEqual((invalid.error as Json).error, { type: 'invalid_request_error', message: 'max_tokens: is required', code: 'invalid_request', param: 'max_tokens' });

    const badBlock = await rawStream({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/bmp', data: 'x' } }] }] });
    assert.equal(badBlock.status, 400);
    assert.equal(JSON.parse(badBlock.text).error.param, 'messages[0].content[0].source.media_type');

    const get = await fetch(`${gw.origin}/v1/messages`, { headers: { 'x-api-key': secret } });
    assert.equal(get.status, 405);
    assert.equal(errorBodySchema.parse(await get.json()).error.type, 'invalid_request_error');
    const noKey = await fetch(`${gw.origin}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(noKey.status, 401);
    assert.equal(((await noKey.json()) as Json).error.code, 'missing_api_key');

    const limited = await gw.gateway.app.inject({
      method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${gw.adminKey}` },
      payload: { name: 'rpm1', rate_limit: { requests_per_minute: 1 } },
    });
    const limitedSecret = (limited.json() as Json).key as string;
    const one = new Anthropic({ authToken: limitedSecret, apiKey: null, baseURL: gw.origin, maxRetries: 0 });
    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await one.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    const rate = await one.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(rate instanceof Anthropic.RateLimitError);
    assert.equal((rate.error as Json).error.type, 'rate_limit_error');
    assert.equal((rate.error as Json).error.code, 'rate_limited');

    const poor = await gw.gateway.app.inject({
      method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${gw.adminKey}` }, payload: { name: 'poor', limit: 0.000001 },
    });
    const poorClient = new Anthropic({ apiKey: (poor.json() as Json).key as string, baseURL: gw.origin, maxRetries: 0 });
    const credit = await poorClient.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(credit instanceof Anthropic.PaymentRequiredError);
    assert.equal((credit.error as Json).error.type, 'billing_error');
    assert.equal((credit.error as Json).error.code, 'insufficient_credits');
    assert.equal(anth.requests.length, 1, 'nothing sent upstream for the poor key');

    anth.enqueue({ status: 529, json: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } });
    const over = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(over instanceof Anthropic.InternalServerError);
    errorBodySchema.parse(over.error);
    assert.equal((over.error as Json).error.type, 'overloaded_error');
  });

  test('max_tokens 1e308 is a 400 invalid_request_error naming max_tokens, on both lanes and on count_tokens', async () => {
    for (const [path, model] of [['/v1/messages', 'claude-sonnet-4-5'], ['/v1/messages', 'openai/gpt-test'], ['/v1/messages/count_tokens', 'claude-sonnet-4-5']] as const) {
      const res = await fetch(`${gw.origin}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': secret, 'anthropic-version': '2023-06-01' },
        body: `{"model":"${model}","max_tokens":1e308,"messages":[{"role":"user","content":"x"}]}`,
      });
      assert.equal(res.status, 400, `${path} ${model}`);
      const body = errorBodySchema.parse(await res.json());
      assert.deepEqual(body.error, { type: 'invalid_request_error', message: 'max_tokens: must be at most 100000000', code: 'invalid_request', param: 'max_tokens' });
    }
    assert.equal(anth.requests.length + oai.requests.length, 0, 'nothing sent upstream');
  });

  test('a cancelled stream records the usage the upstream reported so far (message_start), not an estimate', async () => {
    const start = JSON.stringify({ type: 'message_start', message: { id: 'msg_c', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1234, cache_read_input_tokens: 100, output_tokens: 1 } } });
    const block = JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    const delta = JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } });
    const cases: Array<[name: string, path: string, events: string[], model: string]> = [
      ['Messages, native lane, cancelled after message_start only', '/v1/messages', [start], 'claude-sonnet-4-5'],
      ['Messages, native lane, cancelled after the first text', '/v1/messages', [start, block, delta], 'claude-sonnet-4-5'],
      ['chat, translated from Anthropic events, cancelled after the first text', '/v1/chat/completions', [start, block, delta], 'anthropic/claude-sonnet-4.5'],
    ];
    for (const [name, path, events, model] of cases) {
      // The events at once, then the upstream stalls (the next piece would come a minute later).
      anth.enqueue({ rawChunks: [anthropicBytes(events), 'event: ping\ndata: {"type":"ping"}\n\n'], delayMs: 60_000 });
      const abort = new AbortController();
      const res = await fetch(`${gw.origin}${path}`, {
        method: 'POST', signal: abort.signal,
        headers: { 'content-type': 'application/json', 'x-api-key': secret, 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Hello' }] }),
      });
      assert.equal(res.status, 200, name);
      const reader = res.body!.getReader();
      if (events.length > 1) {
        // Read until the text is relayed, so the upstream's message_start was surely seen.
        let seen = '';
        while (!seen.includes('Hel')) seen += new TextDecoder().decode((await reader.read()).value);
      } else {
        // Nothing but keep-alive pings reaches the client: give the gateway time to read message_start.
        await new Promise((r) => setTimeout(r, 300));
      }
      abort.abort();
      await anth.waitForAbort();
      const rec = await recordOf(res.headers.get('x-request-id')!);
      assert.equal(rec.status, 'cancelled', name);
      assert.equal(rec.usage_source, 'upstream', name);
      assert.equal(rec.prompt_tokens, 1334, name);
      assert.equal(rec.cached_tokens, 100, name);
      assert.equal(rec.completion_tokens, 1, name);
      assert.equal(rec.served_model, 'anthropic/claude-sonnet-4.5', name);
    }
  });

  test('count_tokens: the upstream count for anthropic endpoints, the estimate otherwise, marked in a header', async () => {
    anth.enqueue({ json: { input_tokens: 42 } });
    const { data, response } = await client.messages
      .countTokens({ model: 'claude-sonnet-4-5', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello' }] })
      .withResponse();
    assert.deepEqual(data, { input_tokens: 42 });
    assert.equal(response.headers.get('x-op-token-count'), 'upstream');
    const sent = anth.requests[0]!;
    assert.equal(sent.path, '/v1/messages/count_tokens');
    assert.equal(sent.headers['anthropic-beta'], BETA);
    assert.deepEqual(sent.json, { model: 'claude-sonnet-4-5-20250929', system: 'Be brief.', messages: [{ role: 'user', content: 'Hello' }] });

    const est = await client.messages.countTokens({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'Hello there, how are you today?' }] }).withResponse();
    assert.equal(est.response.headers.get('x-op-token-count'), 'estimated');
    assert.ok(est.data.input_tokens >= 8 && est.data.input_tokens <= 20, `estimate ${est.data.input_tokens}`);
    assert.equal(oai.requests.length, 0);

    const nf = await client.messages.countTokens({ model: 'nope/none', messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    assert.ok(nf instanceof Anthropic.NotFoundError);
    assert.equal((nf.error as Json).error.code, 'no_endpoint_available');
  });

  test('GET /v1/models in Anthropic\'s shape with anthropic-version (aliases listed), OpenAI\'s otherwise', async () => {
    const page = await client.models.list({ limit: 1000 });
    const ids = page.data.map((m) => m.id);
    assert.deepEqual(ids, ['anthropic/claude-sonnet-4.5', 'openai/gpt-test', 'google/gemini-test', 'anthropic/claude-fallback', 'claude-sonnet-4-5']);
    assert.deepEqual(page.data[4], { type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '1970-01-01T00:00:00.000Z' });
    const small = await fetch(`${gw.origin}/v1/models?limit=2`, { headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01' } });
    assert.deepEqual(await small.json(), { data: [
      { type: 'model', id: 'anthropic/claude-sonnet-4.5', display_name: 'Claude Sonnet 4.5', created_at: '1970-01-01T00:00:00.000Z' },
      { type: 'model', id: 'openai/gpt-test', display_name: 'GPT test', created_at: '1970-01-01T00:00:00.000Z' },
    ], has_more: true, first_id: 'anthropic/claude-sonnet-4.5', last_id: 'openai/gpt-test' });
    const openai = await fetch(`${gw.origin}/v1/models`, { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(((await openai.json()) as Json).object, 'list');
  });

  test('retention none keeps no text; the Vercel AI SDK anthropic provider works by translation', async () => {
    oai.enqueue({ json: { id: 'c3', object: 'chat.completion', created: 1, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content: 'Vercel ok.' }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 2 } } });
    const provider = createAnthropic({ baseURL: `${gw.origin}/v1`, apiKey: secret });
    const out = await generateText({ model: provider('openai/gpt-test'), prompt: 'Say ok', maxOutputTokens: 20, providerOptions: { anthropic: {} }, headers: {} });
    assert.equal(out.text, 'Vercel ok.');
    assert.equal(out.usage.inputTokens, 9);
    assert.equal(out.finishReason, 'stop');

    oai.enqueue({ sse: [openaiChunk({ role: 'assistant', content: 'Str' }), openaiChunk({ content: 'eamed.' }), openaiChunk({}, 'stop', { prompt_tokens: 9, completion_tokens: 2 })] });
    const streamed = streamText({ model: provider('openai/gpt-test'), prompt: 'Say ok', maxOutputTokens: 20 });
    assert.equal(await streamed.text, 'Streamed.');

    anth.enqueue({ json: loadJson('anthropic/anthropic-text.json') });
    await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: 'secret text' }], op: { retention: 'none' } } as Anthropic.MessageCreateParamsNonStreaming);
    const rec = await lastRecord();
    assert.equal(rec.content, null);
    assert.equal(rec.retention, 'none');
  });
});

test('config: an alias may not be a model id or the alias of another model', () => {
  const model = (id: string, aliases: string[]) => ({ id, context_length: 1000, aliases, endpoints: [{ provider: 'a', upstream_model: 'm', pricing: { prompt: 1, completion: 1 } }] });
  assert.throws(
    () => parseConfig({ providers: [{ id: 'a', kind: 'anthropic' }], models: [model('x/one', ['claude-a']), model('x/two', ['claude-a', 'x/one'])] }, 'test'),
    (err: Error) => err.message.includes('models[1].aliases[0]: "claude-a" is already an alias of x/one') && err.message.includes('models[1].aliases[1]: "x/one" is the id of a model'),
  );
});


test('convertMessagesToChat: every block kind, tool choice, thinking and output config, with the losses listed', () => {
  const req = parseMessagesRequest({
    model: 'm', max_tokens: 100, stop_sequences: ['END'], metadata: { user_id: 'u1' }, top_k: 5,
    system: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }],
    thinking: { type: 'enabled', budget_tokens: 2048 },
    tool_choice: { type: 'tool', name: 'f', disable_parallel_tool_use: true },
    tools: [{ name: 'f', input_schema: { type: 'object' } }, { type: 'code_execution_20250825', name: 'code_execution' }],
    output_config: { effort: 'high', format: { type: 'json_schema', schema: { type: 'object' } } },
    context_management: { edits: [] },
    messages: [
      { role: 'system', content: 'inner system' },
      { role: 'user', content: [
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBER' }, title: 'a.pdf' },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain doc' } },
        { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      ] },
      { role: 'assistant', content: [
        { type: 'thinking', thinking: 'hmm', signature: 'sig1' },
        { type: 'redacted_thinking', data: 'opaque' },
        { type: 'text', text: 'calling' },
        { type: 'tool_use', id: 't1', name: 'f', input: { a: 1 } },
      ] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: [{ type: 'text', text: 'boom' }, { type: 'image', source: { type: 'url', url: 'https://x/y.png' } }] }] },
    ],
  });
  const { chat, warnings } = convertMessagesToChat(req);
  assert.deepEqual(chat, {
    model: 'm', max_tokens: 100, top_k: 5, stop: ['END'], user: 'u1',
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'sys', cache_control: { type: 'ephemeral' } }] },
      { role: 'system', content: [{ type: 'text', text: 'inner system' }] },
      { role: 'user', content: [
        { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBER' } },
        { type: 'text', text: 'plain doc' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      ] },
      {
        role: 'assistant', content: 'calling', reasoning: 'hmm',
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        reasoning_details: [
          { type: 'reasoning.text', text: 'hmm', signature: 'sig1', format: 'anthropic-claude-v1' },
          { type: 'reasoning.encrypted', data: 'opaque', format: 'anthropic-claude-v1' },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: 'Error: boom' },
    ],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    tool_choice: { type: 'function', function: { name: 'f' } },
    parallel_tool_calls: false,
    reasoning: { max_tokens: 2048 },
    reasoning_effort: 'high',
    response_format: { type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' }, strict: true } },
  });
  assert.deepEqual(warnings, [
    'messages[1].content[2]: document with source "url" left out',
    'messages[3].content[0].content[1]: image inside a tool result left out (tool messages carry text only)',
    'tool "code_execution" (code_execution_20250825) left out: server tools run only on Anthropic',
    'context_management left out: it has no equivalent outside Anthropic',
  ]);
});
