/**
 * The OpenAI Agents SDK (`@openai/agents`, a devDependency) against the gateway: an Agent with
 * one function tool, its default OpenAI client pointed at the gateway (`setDefaultOpenAIClient`)
 * so it speaks the Responses API there, tracing off so nothing leaves the machine. A scripted
 * `openai`-kind upstream on port 0 answers the first turn with a function call and the second
 * with text; the SDK runs the tool in between.
 *
 * The SDK is pinned at 0.3.9, the last release whose peer range (`zod ^3.25.40 || ^4.0`)
 * accepts the project's zod 3.25.76; later ones ask for `zod ^4.0.0`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const chunk = (delta: Json, finish: string | null = null) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
const usage = (p: number, c: number) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } });
const callJson = (id: string, args: string) => ({
  json: { id: 'c2', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'lookup_stock', arguments: args } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 41, completion_tokens: 9, total_tokens: 50 } },
});
const textJson = (text: string) => ({ json: { id: 'c3', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 63, completion_tokens: 7, total_tokens: 70 } } });

describe('OpenAI Agents SDK (@openai/agents) through /v1/responses', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let keyId: string;
  /** The arguments the tool ran with, in order. */
  const ran: { sku: string; warehouse: string }[] = [];
  /** Paths the SDK called on the gateway. */
  const called: string[] = [];

  const lookupStock = tool({
    name: 'lookup_stock',
    description: 'Units in stock of one product in one warehouse',
    parameters: z.object({ sku: z.string(), warehouse: z.string() }),
    execute: async ({ sku, warehouse }) => {
      ran.push({ sku, warehouse });
      return JSON.stringify({ sku, warehouse, units: 17 });
    },
  });

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-up' }],
      models: [{ id: 'test/agent', context_length: 8192, endpoints: [{ provider: 'up', upstream_model: 'up-model', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'parallel_tool_calls', 'temperature', 'top_p', 'max_tokens', 'max_completion_tokens'] }] }],
    });
    const key = await gw.createKey('agents-sdk');
    keyId = key.id;
    setTracingDisabled(true);
    setOpenAIAPI('responses');
    const client = new OpenAI({
      baseURL: gw.baseURL,
      apiKey: key.secret,
      maxRetries: 0,
      fetch: async (url, init) => {
        called.push(new URL(String(url)).pathname);
        return fetch(url, init);
      },
    });
    // The same openai package; the SDK's declarations see its CommonJS types, this file its ESM ones.
    setDefaultOpenAIClient(client as unknown as Parameters<typeof setDefaultOpenAIClient>[0]);
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  test('the agent calls its tool with the scripted arguments, then answers; two generation records', async () => {
    upstream.enqueue(callJson('call_ag1', '{"sku":"BOLT-M6","warehouse":"Porto"}'), textJson('Porto holds 17 units of BOLT-M6.'));
    const agent = new Agent({ name: 'Stock clerk', instructions: 'Answer stock questions with the tool.', model: 'test/agent', tools: [lookupStock] });
    const result = await run(agent, 'How many BOLT-M6 are in Porto?');

    assert.deepEqual(ran, [{ sku: 'BOLT-M6', warehouse: 'Porto' }]);
    assert.equal(result.finalOutput, 'Porto holds 17 units of BOLT-M6.');
    assert.deepEqual(called, ['/v1/responses', '/v1/responses']);

    // The second upstream turn carried the call and the tool's output.
    assert.equal(upstream.requests.length, 2);
    const second = upstream.requests[1]!.json as Json;
    const assistant = (second.messages as Json[]).find((m) => m.role === 'assistant');
    assert.deepEqual(assistant?.tool_calls, [{ id: 'call_ag1', type: 'function', function: { name: 'lookup_stock', arguments: '{"sku":"BOLT-M6","warehouse":"Porto"}' } }]);
    const toolMessage = (second.messages as Json[]).find((m) => m.role === 'tool');
    assert.equal(toolMessage?.tool_call_id, 'call_ag1');
    assert.deepEqual(JSON.parse(String(toolMessage?.content)), { sku: 'BOLT-M6', warehouse: 'Porto', units: 17 });

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', keyId).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.finish_reason, r.prompt_tokens, r.completion_tokens]), [
      ['responses', 'success', 'tool_calls', 41, 9],
      ['responses', 'success', 'stop', 63, 7],
    ]);
  });

  test('streamed: the same loop over Responses events', async () => {
    ran.length = 0;
    upstream.enqueue(
      { sse: [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_ag2', type: 'function', function: { name: 'lookup_stock', arguments: '{"sku":"NUT-M8",' } }] }), chunk({ tool_calls: [{ index: 0, function: { arguments: '"warehouse":"Lyon"}' } }] }), chunk({}, 'tool_calls'), usage(40, 8)] },
      { sse: [chunk({ role: 'assistant', content: 'Lyon holds ' }), chunk({ content: '17 units of NUT-M8.' }), chunk({}, 'stop'), usage(60, 6)] },
    );
    const agent = new Agent({ name: 'Stock clerk', instructions: 'Answer stock questions with the tool.', model: 'test/agent', tools: [lookupStock] });
    const stream = await run(agent, 'How many NUT-M8 are in Lyon?', { stream: true });
    let deltas = '';
    for await (const event of stream) {
      if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') deltas += event.data.delta;
    }
    await stream.completed;

    assert.deepEqual(ran, [{ sku: 'NUT-M8', warehouse: 'Lyon' }]);
    assert.equal(stream.finalOutput, 'Lyon holds 17 units of NUT-M8.');
    assert.equal(deltas, 'Lyon holds 17 units of NUT-M8.');

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', keyId).where('streamed', '=', 1).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.finish_reason, r.prompt_tokens, r.completion_tokens]), [
      ['responses', 'success', 'tool_calls', 40, 8],
      ['responses', 'success', 'stop', 60, 6],
    ]);
  });
});
