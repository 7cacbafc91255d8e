/**
 * An Anthropic upstream that restarts its message mid-stream (a second `message_start`, as
 * proxies that retry inside one stream do) never yields a broken tool call (issue 9 §4): every
 * tool call the client receives has valid JSON arguments, the answer text is not sent twice,
 * and the restarted message's finish reason and usage count. Built from real recordings in
 * ../shared/fixtures/recorded/anthropic, spliced so the first message stops mid tool call.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { fixturesAvailable, fixturesDir, loadChunks, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletionChunk } from '../helpers/openapi.js';
import { sseJsonEvents } from '../helpers/sse.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const TEXT_THEN_TOOL = 'anthropic/anthropic-json-tool.2.chunks.txt';
const TOOL_ONLY = 'anthropic/anthropic-json-other-tool.1.chunks.txt';
const skip = fixturesAvailable() && existsSync(join(fixturesDir, TEXT_THEN_TOOL)) ? false : 'the Anthropic recordings are absent';

/** The recording's events up to and including the first `input_json_delta` with text, then the whole recording again. */
function restartMidToolCall(rel: string): string[] {
  const events = loadChunks(rel);
  const cut = events.findIndex((e) => e.includes('"input_json_delta"') && !e.includes('"partial_json":""'));
  assert.ok(cut > 0, `${rel} has a tool call with arguments`);
  return [...events.slice(0, cut + 1), ...events];
}

describe('Anthropic: a message restarted mid-stream', { skip }, () => {
  let up: Upstream;
  let gw: TestGateway;
  let client: OpenAI;
  const tools = [{ type: 'function' as const, function: { name: 'json', parameters: { type: 'object' } } }, { type: 'function' as const, function: { name: 'weather', parameters: { type: 'object' } } }];

  before(async () => {
    up = await startUpstream();
    gw = await startGateway({
      providers: [{ id: 'claude', kind: 'anthropic', base_url: up.url, api_key: 'k' }],
      models: [{ id: 'anthropic/claude', context_length: 200000, endpoints: [{ provider: 'claude', upstream_model: 'claude-haiku-4-5', supported_parameters: ['tools', 'tool_choice', 'max_tokens', 'response_format'] }] }],
    });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await up.close();
  });

  async function rawStream(): Promise<Json[]> {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', stream: true, tools, messages: [{ role: 'user', content: 'weather?' }] }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.ok(text.endsWith('data: [DONE]\n\n'));
    const chunks = sseJsonEvents(text);
    for (const c of chunks) assert.deepEqual(validateChatCompletionChunk(c), []);
    return chunks;
  }

  /** Tool calls folded from the deltas, by index. */
  const foldCalls = (chunks: Json[]) => {
    const calls: { id: string; name: string; arguments: string }[] = [];
    for (const d of chunks.flatMap((c) => c.choices[0]?.delta?.tool_calls ?? []) as Json[]) {
      if (d.id) calls[d.index] = { id: d.id, name: d.function.name, arguments: '' };
      calls[d.index]!.arguments += d.function?.arguments ?? '';
    }
    return calls;
  };

  test('text, then a tool call cut by a second message_start: one whole call, the text once', async () => {
    up.enqueue({ framing: 'anthropic', sse: restartMidToolCall(TEXT_THEN_TOOL) });
    const chunks = await rawStream();
    const calls = foldCalls(chunks);
    assert.deepEqual(calls, [{ id: 'toolu_01KFbKqPYSuAKujiL6mTfzYA', name: 'json', arguments: '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}' }]);
    for (const c of calls) assert.doesNotThrow(() => JSON.parse(c.arguments), c.arguments);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), "I'll invoke the JSON response tool.");
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['tool_calls']);
    assert.equal(chunks.at(-1)!.usage.completion_tokens, 47);
  });

  test('a tool-only message cut mid-arguments and restarted: the SDK assembles one call with valid JSON', async () => {
    up.enqueue({ framing: 'anthropic', sse: restartMidToolCall(TOOL_ONLY) });
    const final = await client.chat.completions.stream({ model: 'anthropic/claude', tools, messages: [{ role: 'user', content: 'weather?' }] }).finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls ?? [];
    assert.equal(calls.length, 1);
    const call = calls[0]!;
    assert.equal(call.type, 'function');
    assert.equal(call.type === 'function' ? call.function.name : '', 'weather');
    assert.deepEqual(JSON.parse(call.type === 'function' ? call.function.arguments : ''), { location: 'San Francisco' });
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
  });

  test('response_format through the forced JSON tool, restarted mid-JSON: the content is the JSON once', async () => {
    const events = restartMidToolCall(TOOL_ONLY).map((e) => e.replace('"name":"weather"', '"name":"json_response"'));
    up.enqueue({ framing: 'anthropic', sse: events });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', stream: true, response_format: { type: 'json_object' }, messages: [{ role: 'user', content: 'weather as JSON' }] }),
    });
    const chunks = sseJsonEvents(await res.text());
    const content = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    assert.deepEqual(JSON.parse(content), { location: 'San Francisco' });
    assert.deepEqual(chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean), ['stop']);
  });

  test('a stream cut mid tool call (no restart) sends no half call: before any content it is a failed attempt', async () => {
    const events = loadChunks(TOOL_ONLY);
    const cut = events.findIndex((e) => e.includes('"partial_json":"{'));
    up.enqueue({ framing: 'anthropic', sse: events.slice(0, cut + 1) });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', stream: true, tools, messages: [{ role: 'user', content: 'weather?' }] }),
    });
    assert.equal(res.status, 502);
    assert.equal(((await res.json()) as Json).error.code, 'upstream_connection_failed');
  });
});
