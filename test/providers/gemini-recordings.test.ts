/**
 * Every Gemini `generateContent` / `streamGenerateContent` recording under
 * ../shared/fixtures/recorded/google replayed by an upstream test server (Gemini SSE framing,
 * `data: <json>\r\n\r\n`, no [DONE]), through the gateway (provider kind `gemini`), to the
 * official `openai` SDK. Expected values are read from the recording by a plain fold written
 * here (text, thought text, function calls — whole or streamed as `partialArgs` — thought
 * signatures, finish reason, usage), not from the adapter's code.
 *
 * Recordings of the folder that are not a generateContent response are skipped:
 * - `google-429-retry-info.json`: an error body (429 RESOURCE_EXHAUSTED with RetryInfo), not a
 *   response; it is replayed as a 429 in gemini-errors.test.ts instead.
 * Any `*.json` without `candidates` is skipped the same way (listed by the last test).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { fixturesAvailable, fixturesDir, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { openapiAvailable, validateChatCompletion, validateChatCompletionChunk } from '../helpers/openapi.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const skip = fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent';
const FOLDER = 'google';
const MODEL = 'google/gemini-x';

interface Expected {
  content: string;
  reasoning: string;
  tools: { name: string; args: unknown }[];
  /** Thought signatures in order, with the index of the tool call they ride on (or null). */
  signatures: { data: string; tool: number | null }[];
  finish: string;
  native: string | null;
  prompt: number;
  completion: number;
  reasoningTokens: number | null;
  cached: number | null;
}

/** Set `value` at a JSON path like `$.a.b[0].c` (string values at an existing string are appended). */
function setPath(root: Json, path: string, value: unknown): void {
  const keys = [...path.slice(1).matchAll(/\.([^.[]+)|\[(\d+)\]/g)].map((m) => (m[1] !== undefined ? m[1] : Number(m[2])));
  let node: Json = root;
  keys.forEach((key, k) => {
    const lastKey = k === keys.length - 1;
    if (lastKey) {
      node[key] = typeof value === 'string' && typeof node[key] === 'string' ? node[key] + value : value;
    } else {
      node[key] ??= typeof keys[k + 1] === 'number' ? [] : {};
      node = node[key];
    }
  });
}

/** Fold recorded GenerateContentResponses (one for a complete response, several for a stream). */
function expectedFrom(responses: Json[]): Expected {
  const e: Expected = { content: '', reasoning: '', tools: [], signatures: [], finish: 'stop', native: null, prompt: 0, completion: 0, reasoningTokens: null, cached: null };
  let open: { name: string; args: Json } | undefined;
  for (const r of responses) {
    const cand = r.candidates?.[0];
    for (const p of (cand?.content?.parts ?? []) as Json[]) {
      let tool: number | null = null;
      const fc = p.functionCall as Json | undefined;
      if (fc) {
        if (fc.name) {
          const call = { name: fc.name as string, args: (fc.args ?? {}) as Json };
          e.tools.push(call);
          tool = e.tools.length - 1;
          if (fc.willContinue) open = call;
        } else if (open) {
          tool = e.tools.indexOf(open);
          for (const a of (fc.partialArgs ?? []) as Json[]) {
            const value = 'stringValue' in a ? a.stringValue : 'numberValue' in a ? a.numberValue : 'boolValue' in a ? a.boolValue : null;
            setPath(open.args, a.jsonPath, value);
          }
          if (!fc.willContinue) open = undefined;
        }
      } else if (typeof p.text === 'string') {
        if (p.thought) e.reasoning += p.text;
        else e.content += p.text;
      }
      if (p.thoughtSignature) e.signatures.push({ data: p.thoughtSignature, tool });
    }
    if (cand?.finishReason) e.native = cand.finishReason;
    const u = r.usageMetadata as Json | undefined;
    if (u && typeof u.promptTokenCount === 'number') {
      e.prompt = u.promptTokenCount + (u.toolUsePromptTokenCount ?? 0);
      e.completion = (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0);
      e.reasoningTokens = u.thoughtsTokenCount ?? null;
      e.cached = u.cachedContentTokenCount ?? null;
    }
  }
  const filtered = ['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY'];
  e.finish = e.native === 'MAX_TOKENS' ? 'length' : filtered.includes(e.native ?? '') ? 'content_filter' : e.tools.length > 0 ? 'tool_calls' : 'stop';
  return e;
}

function recordings(suffix: string): string[] {
  if (!fixturesAvailable()) return [];
  return readdirSync(join(fixturesDir, FOLDER)).filter((n) => n.endsWith(suffix)).sort().map((n) => `${FOLDER}/${n}`);
}

const isGenerateContent = (body: unknown): body is Json => typeof body === 'object' && body !== null && Array.isArray((body as Json).candidates);

/** The gateway config: one Gemini provider at the upstream's origin, one model. */
function geminiConfig(upstreamUrl: string) {
  return {
    providers: [{ id: 'gemini', kind: 'gemini', base_url: new URL(upstreamUrl).origin, api_key: 'k' }],
    models: [
      {
        id: MODEL,
        context_length: 1_000_000,
        endpoints: [{ provider: 'gemini', upstream_model: 'gemini-x', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'temperature', 'max_tokens', 'max_completion_tokens'] }],
      },
    ],
  };
}

function assertUsage(usage: Json, e: Expected): void {
  assert.equal(usage.prompt_tokens, e.prompt);
  assert.equal(usage.completion_tokens, e.completion);
  assert.equal(usage.total_tokens, e.prompt + e.completion);
  assert.deepEqual(usage.completion_tokens_details, e.reasoningTokens === null ? undefined : { reasoning_tokens: e.reasoningTokens });
  assert.deepEqual(usage.prompt_tokens_details, e.cached === null ? undefined : { cached_tokens: e.cached });
}

/** The reasoning details the gateway must emit for the expected signatures, given the tool call ids it chose. */
function expectedDetails(e: Expected, toolIds: string[]): Json[] {
  return e.signatures.map((s) => (s.tool === null ? { type: 'reasoning.encrypted', data: s.data, format: 'google-gemini-v1' } : { type: 'reasoning.encrypted', data: s.data, id: toolIds[s.tool], format: 'google-gemini-v1' }));
}

describe('Gemini recordings through the gateway', { skip }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway(geminiConfig(upstream.url));
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  for (const rel of recordings('.chunks.txt')) {
    test(`stream ${rel}`, async () => {
      const lines = loadChunks(rel);
      const expected = expectedFrom(lines.map((l) => JSON.parse(l) as Json));
      upstream.enqueue({ sse: lines, framing: 'gemini', splitAt: 37 });
      const raw: Json[] = [];
      const stream = client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 });
      stream.on('chunk', (c) => raw.push(c as unknown as Json));
      const final = await stream.finalChatCompletion();
      const msg = final.choices[0]!.message as unknown as Json;

      assert.equal(msg.content ?? '', expected.content);
      assert.equal(raw.map((c) => c.choices?.[0]?.delta?.reasoning ?? '').join(''), expected.reasoning);
      const calls = (msg.tool_calls ?? []) as Json[];
      assert.deepEqual(calls.map((t) => ({ name: t.function.name, args: JSON.parse(t.function.arguments) })), expected.tools);
      for (const t of calls) assert.match(t.id, /^call_[A-Za-z0-9]{24}$/);
      assert.equal(new Set(calls.map((t) => t.id)).size, calls.length);
      // Tool-call indexes on the wire are dense and 0-based.
      const indexes = raw.flatMap((c) => (c.choices?.[0]?.delta?.tool_calls ?? []).filter((t: Json) => t.id).map((t: Json) => t.index));
      assert.deepEqual(indexes, calls.map((_, k) => k));
      const details = raw.flatMap((c) => c.choices?.[0]?.delta?.reasoning_details ?? []);
      assert.deepEqual(details, expectedDetails(expected, calls.map((t) => t.id)));
      assert.equal(final.choices[0]!.finish_reason, expected.finish);

      const last = raw.at(-1)!;
      assert.deepEqual(last.choices, []);
      assertUsage(last.usage, expected);
      if (openapiAvailable()) for (const c of raw) assert.deepEqual(validateChatCompletionChunk(c), [], JSON.stringify(c));
      assert.ok(raw.every((c) => c.id === final.id && c.model === MODEL));

      const sent = upstream.requests.at(-1)!;
      assert.equal(sent.method, 'POST');
      assert.equal(sent.path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
      assert.equal(sent.headers['x-goog-api-key'], 'k');
      assert.equal(sent.headers.authorization, undefined);
      assert.deepEqual(sent.json, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { temperature: 0.5 } });
    });
  }

  for (const rel of recordings('.json')) {
    const body = loadJson(rel);
    if (!isGenerateContent(body)) continue;
    test(`complete ${rel}`, async () => {
      const expected = expectedFrom([body]);
      upstream.enqueue({ json: body });
      const { data, response } = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }).withResponse();
      const out = data.choices[0]!.message as unknown as Json;
      assert.equal(out.content, expected.content === '' ? null : expected.content);
      assert.equal(out.reasoning ?? null, expected.reasoning || null);
      const calls = (out.tool_calls ?? []) as Json[];
      assert.deepEqual(calls.map((t) => ({ name: t.function.name, args: JSON.parse(t.function.arguments) })), expected.tools);
      for (const t of calls) assert.match(t.id, /^call_[A-Za-z0-9]{24}$/);
      assert.deepEqual(out.reasoning_details ?? [], expectedDetails(expected, calls.map((t) => t.id)));
      assert.equal(data.choices[0]!.finish_reason, expected.finish);
      assertUsage(data.usage as unknown as Json, expected);
      assert.equal(response.headers.get('x-op-generation-id'), data.id);
      assert.equal(data.model, MODEL);
      if (openapiAvailable()) assert.deepEqual(validateChatCompletion(data), []);
      const sent = upstream.requests.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-x:generateContent');
      assert.equal(sent.headers['x-goog-api-key'], 'k');
      assert.deepEqual(sent.json, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] });
    });
  }

  test('the recordings skipped are exactly the ones that are not generateContent responses', () => {
    const skipped = recordings('.json').filter((rel) => !isGenerateContent(loadJson(rel)));
    assert.deepEqual(skipped, ['google/google-429-retry-info.json']);
  });

  test('records of the replays carry the native finish reason and upstream usage', async () => {
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().execute();
    assert.ok(rows.length > 0);
    const replays = recordings('.chunks.txt').length + recordings('.json').filter((rel) => isGenerateContent(loadJson(rel))).length;
    assert.equal(rows.length, replays);
    for (const row of rows as Json[]) {
      assert.equal(row.status, 'success');
      assert.equal(row.provider, 'gemini');
      assert.equal(row.upstream_model, 'gemini-x');
      assert.equal(row.native_finish_reason, 'STOP');
      assert.equal(row.usage_source, 'upstream');
    }
  });
});
