/**
 * Every OpenAI-format recording under ../shared/fixtures/recorded replayed by an upstream test
 * server, through the gateway, to the official `openai` SDK. Expected values are read from the
 * recording itself (a plain fold over its chunks), not from the gateway's code.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { fixturesAvailable, fixturesDir, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { validateChatCompletion, validateChatCompletionChunk } from '../helpers/openapi.js';

const FOLDERS = ['openai', 'openai-compatible', 'deepseek', 'groq', 'mistral', 'xai', 'alibaba', 'moonshotai'];
const skip = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';

interface Expected {
  content: string;
  reasoning: string;
  tools: { name: string; arguments: string }[];
  finish: string;
  prompt: number | null;
  completion: number | null;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function openAIFinish(raw: string | null | undefined, hasTools: boolean): string {
  if (raw === 'length' || raw === 'content_filter') return raw;
  if (raw === 'tool_calls' || raw === 'function_call' || hasTools) return 'tool_calls';
  return 'stop';
}

/** Text and reasoning of a content value: a string, or Mistral's array of text/thinking parts. */
function contentOf(content: unknown): [string, string] {
  if (typeof content === 'string') return [content, ''];
  if (!Array.isArray(content)) return ['', ''];
  let text = '';
  let thought = '';
  for (const p of content as Json[]) {
    if (p.type === 'text') text += p.text;
    if (p.type === 'thinking') thought += (p.thinking as Json[]).map((t) => t.text).join('');
  }
  return [text, thought];
}

/** Fold a recorded stream the way a careful client would. */
function expectedFromChunks(lines: string[]): Expected {
  const e: Expected = { content: '', reasoning: '', tools: [], finish: 'stop', prompt: null, completion: null };
  let raw: string | null = null;
  const byKey = new Map<string, { name: string; arguments: string }>();
  let last: { name: string; arguments: string } | undefined;
  for (const line of lines) {
    const c = JSON.parse(line) as Json;
    for (const ch of (c.choices ?? []) as Json[]) {
      const d = (ch.delta ?? {}) as Json;
      const [text, thought] = contentOf(d.content);
      e.content += text;
      e.reasoning += thought;
      const r = d.reasoning_content ?? d.reasoning;
      if (typeof r === 'string') e.reasoning += r;
      for (const tc of (d.tool_calls ?? []) as Json[]) {
        const key = tc.id ? `id:${tc.id}` : tc.index !== undefined ? `ix:${tc.index}` : undefined;
        let call = key ? byKey.get(key) : last;
        if (!call && tc.index !== undefined) call = [...byKey.entries()].find(([k]) => k === `ix:${tc.index}`)?.[1];
        if (!call || (tc.id && !byKey.has(`id:${tc.id}`))) {
          call = { name: tc.function?.name ?? '', arguments: '' };
          e.tools.push(call);
          if (tc.id) byKey.set(`id:${tc.id}`, call);
          if (tc.index !== undefined) byKey.set(`ix:${tc.index}`, call);
        }
        if (typeof tc.function?.arguments === 'string') call.arguments += tc.function.arguments;
        last = call;
      }
      if (ch.finish_reason) raw = ch.finish_reason as string;
    }
    if (c.usage && typeof c.usage.prompt_tokens === 'number') {
      e.prompt = c.usage.prompt_tokens;
      e.completion = c.usage.completion_tokens;
    }
  }
  e.finish = openAIFinish(raw, e.tools.length > 0);
  return e;
}

function recordings(suffix: string): string[] {
  if (!fixturesAvailable()) return [];
  return FOLDERS.flatMap((f) => readdirSync(join(fixturesDir, f)).filter((n) => n.endsWith(suffix)).map((n) => `${f}/${n}`));
}

describe('OpenAI-format recordings through the gateway', { skip }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(oneModelConfig(upstream.url, { endpoint: { supported_parameters: ['tools', 'tool_choice', 'temperature', 'max_tokens', 'max_completion_tokens'] } }));
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  for (const rel of recordings('.chunks.txt').filter((r) => !r.includes('completion-text'))) {
    test(`stream ${rel}`, async () => {
      const lines = loadChunks(rel);
      const expected = expectedFromChunks(lines);
      upstream.enqueue({ sse: lines, framing: 'openai', splitAt: 37 });
      const raw: Json[] = [];
      const stream = client.chat.completions.stream({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] });
      stream.on('chunk', (c) => raw.push(c as unknown as Json));
      const final = await stream.finalChatCompletion();
      const msg = final.choices[0]!.message as unknown as Json;
      assert.equal(msg.content ?? '', expected.content);
      assert.equal(final.choices[0]!.finish_reason, expected.finish);
      assert.deepEqual((msg.tool_calls ?? []).map((t: Json) => ({ name: t.function.name, arguments: t.function.arguments })), expected.tools);
      const reasoning = raw.map((c) => c.choices?.[0]?.delta?.reasoning ?? '').join('');
      assert.equal(reasoning, expected.reasoning);
      const last = raw.at(-1)!;
      assert.deepEqual(last.choices, []);
      if (expected.prompt !== null) {
        assert.equal(last.usage.prompt_tokens, expected.prompt);
        assert.equal(last.usage.completion_tokens, expected.completion);
      } else {
        assert.equal(typeof last.usage.prompt_tokens, 'number');
      }
      for (const c of raw) assert.deepEqual(validateChatCompletionChunk(c), [], JSON.stringify(c));
      assert.ok(raw.every((c) => c.id === final.id && c.model === 'test/model'));
      assert.match(final.id, /^gen_/);
      const sent = upstream.requests.at(-1)!.json as Json;
      assert.equal(sent.stream, true);
      assert.deepEqual(sent.stream_options, { include_usage: true });
      assert.equal(sent.model, 'upstream-model');
    });
  }

  for (const rel of recordings('.json')) {
    const body = loadJson(rel) as Json;
    if (body.object !== 'chat.completion') continue;
    test(`complete ${rel}`, async () => {
      upstream.enqueue({ json: body });
      const { data, response } = await client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      const m = body.choices[0].message as Json;
      const out = data.choices[0]!.message as unknown as Json;
      const [text, thought] = contentOf(m.content);
      assert.equal(out.content ?? null, m.content === null || m.content === undefined ? null : text);
      assert.equal(out.reasoning ?? null, ((m.reasoning_content ?? m.reasoning ?? '') + thought) || null);
      assert.deepEqual(
        (out.tool_calls ?? []).map((t: Json) => [t.function.name, JSON.parse(t.function.arguments)]),
        (m.tool_calls ?? []).map((t: Json) => [t.function.name, typeof t.function.arguments === 'string' ? JSON.parse(t.function.arguments || '{}') : t.function.arguments]),
      );
      assert.equal(data.choices[0]!.finish_reason, openAIFinish(body.choices[0].finish_reason, (m.tool_calls ?? []).length > 0));
      assert.equal(data.usage!.prompt_tokens, body.usage.prompt_tokens);
      assert.equal(data.usage!.completion_tokens, body.usage.completion_tokens);
      assert.equal(response.headers.get('x-op-generation-id'), data.id);
      assert.match(response.headers.get('x-request-id') ?? '', /^req_/);
      assert.equal(data.model, 'test/model');
      assert.deepEqual(validateChatCompletion(data), []);
    });
  }
});
