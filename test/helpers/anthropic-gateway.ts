/**
 * A gateway with an Anthropic-kind upstream (and an OpenAI-kind backup) for the Anthropic
 * provider's error tests: the config, Anthropic stream events, a fresh setup per test, and
 * the checks of SSE bodies and JSON errors. Shared by test/providers/anthropic-errors.test.ts
 * and test/pipeline/stream-errors.test.ts.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from './replay-upstream.js';
import { startGateway, type TestGateway } from './gateway.js';
import { validateErrorResponse } from './openapi.js';
import { sseJsonEvents } from './sse.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * Model `anthropic/claude` served by provider `claude` (kind anthropic) only; model
 * `anthropic/claude-fallback` by `claude` first, then provider `backup` (kind openai).
 */
export function config(claudeUrl: string, backupUrl: string) {
  const claude = { provider: 'claude', upstream_model: 'claude-sonnet-4-5', pricing: { prompt: 3, completion: 15 }, supported_parameters: ['tools', 'tool_choice', 'temperature', 'max_tokens'] };
  return {
    providers: [
      { id: 'claude', kind: 'anthropic', base_url: claudeUrl, api_key: 'k' },
      { id: 'backup', kind: 'openai', base_url: backupUrl, api_key: 'sk-backup' },
    ],
    models: [
      { id: 'anthropic/claude', context_length: 200000, endpoints: [claude] },
      { id: 'anthropic/claude-fallback', context_length: 200000, endpoints: [claude, { provider: 'backup', upstream_model: 'gpt-backup', supported_parameters: ['max_tokens'] }] },
    ],
  };
}

export const ev = (e: Json): string => JSON.stringify(e);
export const START = ev({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } });
export const TEXT_START = ev({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
export const textDelta = (t: string, index = 0): string => ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
export const stopBlock = (index: number): string => ev({ type: 'content_block_stop', index });
export const messageDelta = (stop: string, output: number): string => ev({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: output } });
export const STOP = ev({ type: 'message_stop' });
export const overloaded = ev({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });

/** The JSON chunks of a gateway chat stream, asserting that it ends with `data: [DONE]`. */
export function parseSse(text: string): Json[] {
  assert.ok(text.endsWith('data: [DONE]\n\n'), text.slice(-200));
  return sseJsonEvents(text);
}

export interface Setup {
  claude: Upstream;
  backup: Upstream;
  gw: TestGateway;
  client: OpenAI;
  post(body: Json): Promise<Response>;
}

/**
 * A fresh gateway and upstreams per test: failures feed the router's endpoint health (circuit
 * breaker, Retry-After cooldown), which must not leak from one test into the next.
 */
export async function setup(t: TestContext): Promise<Setup> {
  const claude = await startUpstream();
  const backup = await startUpstream();
  const gw = await startGateway(config(claude.url, backup.url));
  const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  t.after(async () => {
    assert.equal(claude.pendingCount(), 0, 'every scripted claude response was used');
    assert.equal(backup.pendingCount(), 0, 'every scripted backup response was used');
    await gw.close();
    await claude.close();
    await backup.close();
  });
  const post = (body: Json): Promise<Response> =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude', messages: [{ role: 'user', content: 'hi' }], ...body }),
    });
  return { claude, backup, gw, client, post };
}

/** Check a JSON error response: its status and a valid envelope; returns `error` without its request_id. */
export async function errorOf(res: Response, status: number): Promise<Json> {
  assert.equal(res.status, status);
  const body = (await res.json()) as Json;
  assert.deepEqual(validateErrorResponse(body), []);
  const { request_id: _r, ...error } = body.error as Json;
  return error;
}

/** An Anthropic error body as the API sends it. */
export const anthropicError = (type: string, message: string) => ({ type: 'error', error: { type, message }, request_id: 'req_011' });
