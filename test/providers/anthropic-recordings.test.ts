/**
 * Every Anthropic Messages API recording under ../shared/fixtures/recorded/anthropic replayed by
 * an upstream test server, through the gateway (provider kind `anthropic`), to the official
 * `openai` SDK. Expected values are read from the recording itself by a plain fold over its
 * events / content blocks, written here independently of the adapter:
 * - content = the text of `text` blocks (start text + `text_delta`s), null when there is none;
 * - reasoning = the `thinking` text; reasoning_details = each signed thinking block;
 * - tool calls = client `tool_use` blocks (server tools are not client tool calls), arguments =
 *   the concatenated `input_json_delta`s, else the start block's input;
 * - finish = stop_reason mapped to the OpenAI set;
 * - usage: prompt = input + cache_read + cache_creation, completion = output (last report wins).
 * Recordings holding several streamed messages (multi-step server-tool runs) are replayed as one
 * request per message.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { fixturesAvailable, fixturesDir, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletion, validateChatCompletionChunk } from '../helpers/openapi.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FOLDER = 'anthropic';
const available = fixturesAvailable() && existsSync(join(fixturesDir, FOLDER));
const skip = available ? false : 'the recordings folder ../shared/fixtures/recorded/anthropic is absent';

/** Anthropic stop_reason → OpenAI finish_reason (anything else → stop). */
const FINISH: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

interface Expected {
  content: string | null;
  reasoning: string;
  details: Json[];
  tools: { id: string; name: string; arguments: unknown }[];
  finish: string;
  prompt: number;
  completion: number;
  cached: number | null;
  reasoningTokens: number | null;
}

function usageOf(u: Json): Pick<Expected, 'prompt' | 'completion' | 'cached' | 'reasoningTokens'> {
  return {
    prompt: (u.input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0),
    completion: u.output_tokens ?? 0,
    cached: u.cache_read_input_tokens ?? null,
    reasoningTokens: u.output_tokens_details?.thinking_tokens ?? null,
  };
}

/** Fold one recorded message stream. */
function expectedFromEvents(events: Json[]): Expected {
  let content: string | null = null;
  let reasoning = '';
  const details: Json[] = [];
  const tools: { id: string; name: string; args: string; input: unknown }[] = [];
  const blocks = new Map<number, Json>();
  let stop: string | null = null;
  let usage: Json = {};
  const start = (key: number, b: Json) => {
    const state: Json = { type: b.type, thinking: b.thinking ?? '', signature: b.signature ?? '' };
    blocks.set(key, state);
    if (b.type === 'text') content = (content ?? '') + b.text;
    if (b.type === 'thinking') reasoning += b.thinking;
    if (b.type === 'tool_use') {
      state.tool = { id: b.id, name: b.name, args: '', input: b.input };
      tools.push(state.tool);
    }
  };
  const end = (key: number) => {
    const s = blocks.get(key)!;
    if (s.type === 'thinking' && s.signature) details.push({ type: 'reasoning.text', text: s.thinking, signature: s.signature, format: 'anthropic-claude-v1' });
    if (s.type === 'redacted_thinking') details.push({ type: 'reasoning.encrypted', data: s.data, format: 'anthropic-claude-v1' });
  };
  for (const ev of events) {
    switch (ev.type) {
      case 'message_start':
        usage = { ...ev.message.usage };
        if (ev.message.stop_reason) stop = ev.message.stop_reason;
        (ev.message.content as Json[]).forEach((b, i) => {
          start(-1 - i, b);
          end(-1 - i);
        });
        break;
      case 'content_block_start':
        start(ev.index, ev.content_block);
        break;
      case 'content_block_delta': {
        const s = blocks.get(ev.index)!;
        const d = ev.delta as Json;
        if (d.type === 'text_delta' && s.type === 'text') content = (content ?? '') + d.text;
        if (d.type === 'thinking_delta') {
          reasoning += d.thinking;
          s.thinking += d.thinking;
        }
        if (d.type === 'signature_delta') s.signature += d.signature;
        if (d.type === 'input_json_delta' && s.tool) s.tool.args += d.partial_json;
        break;
      }
      case 'content_block_stop':
        end(ev.index);
        break;
      case 'message_delta':
        if (ev.delta.stop_reason) stop = ev.delta.stop_reason;
        for (const [k, v] of Object.entries(ev.usage ?? {})) if (v !== null) usage[k] = v;
        break;
    }
  }
  return {
    content,
    reasoning,
    details,
    tools: tools.map((t) => ({ id: t.id, name: t.name, arguments: t.args !== '' ? JSON.parse(t.args) : t.input })),
    finish: FINISH[stop ?? ''] ?? 'stop',
    ...usageOf(usage),
  };
}

/** Expected values of a complete (non-streamed) response. */
function expectedFromMessage(m: Json): Expected {
  const texts = (m.content as Json[]).filter((b) => b.type === 'text').map((b) => b.text as string);
  const thinking = (m.content as Json[]).filter((b) => b.type === 'thinking');
  return {
    content: texts.length > 0 ? texts.join('') : null,
    reasoning: thinking.map((b) => b.thinking).join(''),
    details: (m.content as Json[]).flatMap((b): Json[] =>
      b.type === 'thinking' ? [{ type: 'reasoning.text', text: b.thinking, signature: b.signature, format: 'anthropic-claude-v1' }] : b.type === 'redacted_thinking' ? [{ type: 'reasoning.encrypted', data: b.data, format: 'anthropic-claude-v1' }] : [],
    ),
    tools: (m.content as Json[]).filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, arguments: b.input })),
    finish: FINISH[m.stop_reason] ?? 'stop',
    ...usageOf(m.usage),
  };
}

/** Split a recording into its messages: each ends with `message_stop`. */
function messagesOf(lines: string[]): string[][] {
  const out: string[][] = [];
  let current: string[] = [];
  for (const line of lines) {
    current.push(line);
    if ((JSON.parse(line) as Json).type === 'message_stop') {
      out.push(current);
      current = [];
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}

function recordings(suffix: string): string[] {
  if (!available) return [];
  return readdirSync(join(fixturesDir, FOLDER))
    .filter((n) => n.endsWith(suffix))
    .sort()
    .map((n) => `${FOLDER}/${n}`);
}

const CLAUDE_PARAMS = ['tools', 'tool_choice', 'reasoning', 'response_format', 'temperature', 'stop', 'max_tokens'];

/** One anthropic provider (`claude`) serving model `anthropic/claude` at `upstreamUrl` (which ends in /v1). */
function claudeConfig(upstreamUrl: string, endpoint: Json = {}) {
  return {
    providers: [{ id: 'claude', kind: 'anthropic', base_url: upstreamUrl, api_key: 'k' }],
    models: [
      {
        id: 'anthropic/claude',
        name: 'Claude',
        context_length: 200000,
        endpoints: [{ provider: 'claude', upstream_model: 'claude-sonnet-4-5', pricing: { prompt: 3, completion: 15 }, supported_parameters: CLAUDE_PARAMS, ...endpoint }],
      },
    ],
  };
}

describe('Anthropic recordings through the gateway', { skip }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(claudeConfig(upstream.url));
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  function checkUpstreamRequest(stream: boolean): void {
    const req = upstream.requests.at(-1)!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/v1/messages');
    assert.equal(req.headers['x-api-key'], 'k');
    assert.equal(req.headers['anthropic-version'], '2023-06-01');
    assert.equal(req.headers.authorization, undefined);
    const body = req.json as Json;
    const expected: Json = { model: 'claude-sonnet-4-5', max_tokens: 4096, messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] };
    if (stream) expected.stream = true;
    assert.deepEqual(body, expected);
  }

  for (const rel of recordings('.chunks.txt')) {
    test(`stream ${rel}`, async () => {
      const messages = messagesOf(loadChunks(rel));
      assert.ok(messages.length >= 1);
      for (const [m, lines] of messages.entries()) {
        const label = `${rel} message ${m + 1}/${messages.length}`;
        const expected = expectedFromEvents(lines.map((l) => JSON.parse(l) as Json));
        upstream.enqueue({ sse: lines, framing: 'anthropic', splitAt: 37 });
        const raw: Json[] = [];
        const stream = client.chat.completions.stream({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }] });
        stream.on('chunk', (c) => raw.push(c as unknown as Json));
        const final = await stream.finalChatCompletion();
        checkUpstreamRequest(true);
        const msg = final.choices[0]!.message as unknown as Json;
        assert.equal(msg.content ?? null, expected.content === null ? null : expected.content, label);
        assert.equal(final.choices[0]!.finish_reason, expected.finish, label);
        assert.deepEqual(
          (msg.tool_calls ?? []).map((t: Json) => ({ id: t.id, name: t.function.name, arguments: JSON.parse(t.function.arguments) })),
          expected.tools,
          label,
        );
        const deltas = raw.map((c) => c.choices?.[0]?.delta ?? {});
        assert.equal(deltas.map((d) => d.reasoning ?? '').join(''), expected.reasoning, label);
        assert.deepEqual(deltas.flatMap((d) => d.reasoning_details ?? []), expected.details, label);
        // Tool-call indexes are dense and 0-based, in order of the tool_use blocks.
        const starts = deltas.flatMap((d) => (d.tool_calls ?? []).filter((t: Json) => t.id !== undefined).map((t: Json) => t.index));
        assert.deepEqual(starts, expected.tools.map((_, i) => i), label);
        const last = raw.at(-1)!;
        assert.deepEqual(last.choices, [], label);
        assert.equal(last.usage.prompt_tokens, expected.prompt, label);
        assert.equal(last.usage.completion_tokens, expected.completion, label);
        assert.equal(last.usage.total_tokens, expected.prompt + expected.completion, label);
        assert.equal(last.usage.prompt_tokens_details?.cached_tokens ?? null, expected.cached, label);
        assert.equal(last.usage.completion_tokens_details?.reasoning_tokens ?? null, expected.reasoningTokens, label);
        for (const c of raw) assert.deepEqual(validateChatCompletionChunk(c), [], JSON.stringify(c));
        assert.ok(raw.every((c) => c.id === final.id && c.model === 'anthropic/claude'));
        assert.match(final.id, /^gen_/);
      }
    });
  }

  for (const rel of recordings('.json')) {
    test(`complete ${rel}`, async () => {
      const body = loadJson(rel) as Json;
      const expected = expectedFromMessage(body);
      upstream.enqueue({ json: body });
      const { data, response } = await client.chat.completions.create({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      checkUpstreamRequest(false);
      const out = data.choices[0]!.message as unknown as Json;
      assert.equal(out.content, expected.content);
      assert.equal(out.reasoning ?? '', expected.reasoning);
      assert.deepEqual(out.reasoning_details ?? [], expected.details);
      assert.deepEqual(
        (out.tool_calls ?? []).map((t: Json) => ({ id: t.id, name: t.function.name, arguments: JSON.parse(t.function.arguments) })),
        expected.tools,
      );
      assert.equal(data.choices[0]!.finish_reason, expected.finish);
      assert.equal(data.usage!.prompt_tokens, expected.prompt);
      assert.equal(data.usage!.completion_tokens, expected.completion);
      assert.equal(data.usage!.prompt_tokens_details?.cached_tokens ?? null, expected.cached);
      assert.equal(data.usage!.completion_tokens_details?.reasoning_tokens ?? null, expected.reasoningTokens);
      assert.equal(response.headers.get('x-op-generation-id'), data.id);
      assert.equal(data.model, 'anthropic/claude');
      assert.deepEqual(validateChatCompletion(data), []);
    });
  }
});
