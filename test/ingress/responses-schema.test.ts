/**
 * Every Responses object the gateway emits — `POST /v1/responses` bodies, `GET /v1/responses/{id}`
 * and the `response` of every `response.*` stream event — and every stream event itself validate
 * against both published documents: the Open Responses specification's
 * (test/fixtures/open-responses/openapi.json: `ResponseResource`, the `*StreamingEvent` schemas)
 * and OpenAI's (../shared/specs/openai-openapi.yaml: `Response`, `ResponseStreamEvent`). Real
 * `openai` SDK clients against upstreams on port 0, on the translated lane (an `openai`-kind
 * chat upstream) and the native Responses lane (an endpoint with `supports_responses`), for plain,
 * streamed, tool, image, file, multi-turn and `previous_response_id` responses.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { validateResponse, validateResponseStreamEvent } from '../helpers/openapi.js';
import { validateOpenResponsesResource, validateOpenResponsesStreamEvent } from '../helpers/open-responses.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Asserts a Responses object is valid under both documents. */
function assertConforms(response: unknown, what: string): void {
  assert.deepEqual(validateOpenResponsesResource(response), [], `${what}: not a valid Open Responses ResponseResource`);
  assert.deepEqual(validateResponse(response), [], `${what}: not a valid OpenAI Response`);
}

/** Asserts every event (and so every embedded response) is valid under both documents, numbered from 0. */
function assertEventsConform(events: Json[]): void {
  assert.ok(events.length > 0, 'no events');
  events.forEach((e, i) => {
    assert.equal(e.sequence_number, i, `event ${i} sequence_number`);
    assert.deepEqual(validateOpenResponsesStreamEvent(e), [], `event ${i} (${e.type}) under Open Responses`);
    assert.deepEqual(validateResponseStreamEvent(e), [], `event ${i} (${e.type}) under OpenAI`);
    if (e.response !== undefined) assertConforms(e.response, `event ${i} (${e.type}).response`);
  });
}

/** The settings every Response reports when the request sent none of them. */
const DEFAULT_SETTINGS = {
  presence_penalty: 0,
  frequency_penalty: 0,
  top_logprobs: 0,
  background: false,
  service_tier: 'default',
  truncation: 'disabled',
  max_tool_calls: null,
  safety_identifier: null,
  prompt_cache_key: null,
};
const settingsOf = (r: Json) => Object.fromEntries(Object.keys(DEFAULT_SETTINGS).map((k) => [k, r[k]]));

const chunk = (delta: Json, finish: string | null = null) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }], usage: null });
const usageChunk = (prompt: number, completion: number) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'upstream-model', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
const textStream = (text: string) => [chunk({ role: 'assistant', content: text.slice(0, 2) }), chunk({ content: text.slice(2) }), chunk({}, 'stop'), usageChunk(9, 3)];
const textJson = (text: string) => ({
  json: { id: 'chatcmpl-2', object: 'chat.completion', created: 1, model: 'upstream-model', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } },
});
const toolCallStream = [
  chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":"x"}' } }] }),
  chunk({}, 'tool_calls'),
  usageChunk(11, 5),
];

/** A function tool with only the required fields: no `description`, no `strict`. */
const bareTool = { type: 'function' as const, name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } };
/** {@link bareTool} as a request tool (the SDK's type makes `strict` required; the API does not). */
const bareToolParam = bareTool as unknown as OpenAI.Responses.FunctionTool;
const strictTool = { type: 'function' as const, name: 'get_weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }, strict: true };
const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAcCBlCwAAAABJRU5ErkJggg==';
const PDF = 'data:application/pdf;base64,JVBERi0xLjQKJcOkw7zDtsOfCjEgMCBvYmoKPDw+PgplbmRvYmoKdHJhaWxlcgo8PD4+CiUlRU9GCg==';

async function collect(stream: AsyncIterable<unknown>): Promise<Json[]> {
  const events: Json[] = [];
  for await (const e of stream) events.push(e as Json);
  return events;
}

describe('Responses objects against the Open Responses and OpenAI documents', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway({
      retention: 7,
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-upstream' }],
      models: [
        { id: 'test/chat', context_length: 8192, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ provider: 'up', upstream_model: 'upstream-model', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'response_format', 'reasoning', 'parallel_tool_calls'] }] },
        { id: 'test/native', context_length: 8192, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ provider: 'up', upstream_model: 'gpt-native', supports_responses: true, pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'reasoning', 'max_tokens', 'max_completion_tokens', 'temperature', 'top_p', 'response_format'] }] },
      ],
    });
    const key = await gw.createKey('schema');
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  describe('translated lane (chat upstream)', () => {
    test('plain: the body carries every setting the documents require, unset ones at their defaults', async () => {
      upstream.enqueue(textJson('Hello.'));
      const res = (await client.responses.create({ model: 'test/chat', input: 'Hi', store: false })) as unknown as Json;
      assertConforms(res, 'body');
      assert.deepEqual(settingsOf(res), DEFAULT_SETTINGS);
      assert.equal(res.output_text, 'Hello.');
      assert.deepEqual(res.usage.input_tokens, 7);
    });

    test('streamed: every event, usage null in the snapshots before the last', async () => {
      upstream.enqueue({ sse: textStream('Streamed!') });
      const events = await collect(client.responses.stream({ model: 'test/chat', input: 'Hi', store: false }));
      assertEventsConform(events);
      assert.deepEqual(events.map((e) => e.type), ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
      assert.ok('usage' in events[0]!.response, 'response.created carries usage');
      assert.equal(events[0]!.response.usage, null);
      assert.deepEqual(settingsOf(events[0]!.response), DEFAULT_SETTINGS);
      assert.equal(events.at(-1)!.response.usage.output_tokens, 3);
    });

    test('tool call: echoed function tools carry description, parameters and strict (null when unset)', async () => {
      upstream.enqueue({ sse: toolCallStream });
      const events = await collect(client.responses.stream({ model: 'test/chat', input: 'Look x up', tools: [bareToolParam, strictTool], store: false }));
      assertEventsConform(events);
      const final = events.at(-1)!.response as Json;
      assert.deepEqual(final.tools, [{ ...bareTool, description: null, strict: null }, strictTool]);
      assert.deepEqual({ type: final.output[0].type, name: final.output[0].name, arguments: final.output[0].arguments }, { type: 'function_call', name: 'lookup', arguments: '{"q":"x"}' });
      // What goes upstream is unchanged: no strict invented for the bare tool.
      assert.deepEqual((upstream.requests.at(-1)!.json as Json).tools[0], { type: 'function', function: { name: 'lookup', parameters: bareTool.parameters } });

      upstream.enqueue(textJson('Found.'));
      const body = (await client.responses.create({ model: 'test/chat', input: 'Look x up', tools: [bareToolParam], tool_choice: 'required', store: false })) as unknown as Json;
      assertConforms(body, 'non-streamed body with tools');
      assert.deepEqual(body.tools, [{ ...bareTool, description: null, strict: null }]);
    });

    test('image input', async () => {
      upstream.enqueue(textJson('A dot.'));
      const res = (await client.responses.create({ model: 'test/chat', input: [{ role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: PNG, detail: 'low' }] }], store: false })) as unknown as Json;
      assertConforms(res, 'body');
      assert.equal(res.output_text, 'A dot.');
      const sent = (upstream.requests.at(-1)!.json as Json).messages[0].content as Json[];
      assert.deepEqual(sent[1], { type: 'image_url', image_url: { url: PNG, detail: 'low' } });
    });

    test('file input, streamed', async () => {
      upstream.enqueue({ sse: textStream('Empty PDF.') });
      const events = await collect(client.responses.stream({ model: 'test/chat', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Summarise' }, { type: 'input_file', filename: 'a.pdf', file_data: PDF }] }], store: false }));
      assertEventsConform(events);
      assert.equal(events.at(-1)!.response.output_text, 'Empty PDF.');
      const sent = (upstream.requests.at(-1)!.json as Json).messages[0].content as Json[];
      assert.deepEqual(sent[1], { type: 'file', file: { file_data: PDF, filename: 'a.pdf' } });
    });

    test('multi-turn: history with an assistant message, a call and its output', async () => {
      upstream.enqueue({ sse: textStream('It is 3.') });
      const events = await collect(client.responses.stream({
        model: 'test/chat',
        instructions: 'Be brief',
        input: [
          { role: 'user', content: 'Hi' },
          { role: 'assistant', content: [{ type: 'output_text', text: 'Hello.' }] } as never,
          { role: 'user', content: 'What is 1+2?' },
          { type: 'function_call', call_id: 'call_a', name: 'lookup', arguments: '{"q":"1+2"}' },
          { type: 'function_call_output', call_id: 'call_a', output: '3' },
        ],
        tools: [bareToolParam],
        store: false,
      }));
      assertEventsConform(events);
      assert.equal(events.at(-1)!.response.instructions, 'Be brief');
      assert.equal(((upstream.requests.at(-1)!.json as Json).messages as Json[]).length, 6);
    });

    test('previous_response_id: the stored answer, its continuation and both GETs', async () => {
      upstream.enqueue(textJson('Hi Ada!'));
      const first = (await client.responses.create({ model: 'test/chat', input: 'My name is Ada', tools: [bareToolParam] })) as unknown as Json;
      assertConforms(first, 'first body');
      assert.equal(first.store, true);
      upstream.enqueue({ sse: textStream('Ada.') });
      const events = await collect(client.responses.stream({ model: 'test/chat', input: 'My name?', previous_response_id: first.id }));
      assertEventsConform(events);
      const second = events.at(-1)!.response as Json;
      assert.equal(second.previous_response_id, first.id);
      for (const id of [first.id, second.id]) {
        const got = (await client.responses.retrieve(id)) as unknown as Json;
        assertConforms(got, `GET ${id}`);
      }
      const got = (await client.responses.retrieve(first.id)) as unknown as Json;
      assert.deepEqual(got.tools, [{ ...bareTool, description: null, strict: null }]);
      assert.deepEqual(settingsOf(got), DEFAULT_SETTINGS);
    });

    test('settings the client sent are echoed: prompt_cache_key, safety_identifier, max_tool_calls, penalties, top_logprobs', async () => {
      upstream.enqueue(textJson('ok'));
      const sent = { prompt_cache_key: 'pk-1', safety_identifier: 'user-42', max_tool_calls: 3, presence_penalty: 0.5, frequency_penalty: 0.25, top_logprobs: 2 };
      const res = (await client.responses.create({ model: 'test/chat', input: 'x', store: false, ...sent })) as unknown as Json;
      assertConforms(res, 'body');
      assert.deepEqual(settingsOf(res), { ...DEFAULT_SETTINGS, ...sent });
    });

    test('structured output without strict: text.format echoes strict false', async () => {
      upstream.enqueue(textJson('{"city":"Oslo"}'));
      const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
      const res = (await client.responses.create({ model: 'test/chat', input: 'Where?', text: { format: { type: 'json_schema', name: 'place', schema } }, store: false })) as unknown as Json;
      assertConforms(res, 'body');
      assert.deepEqual(res.text.format, { type: 'json_schema', name: 'place', schema, strict: false });
    });

    test('a stream that fails: the error event has both shapes, the SDK throws it with the catalog code', async () => {
      upstream.enqueue({ sse: textStream('Hello world').slice(0, 2), done: false, destroyAfterBytes: 10_000 });
      const res = await fetch(`${gw.baseURL}/responses`, { method: 'POST', headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/chat', input: 'x', stream: true, store: false }) });
      const text = await res.text();
      const events = text.split('\n\n').filter((b) => b.includes('data: ')).map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 6)) as Json);
      assertEventsConform(events);
      const error = events.at(-2)!;
      assert.deepEqual({ type: error.type, code: error.code, param: error.param }, { type: 'error', code: 'upstream_connection_failed', param: null });
      assert.deepEqual({ ...error.error, message: undefined }, { type: 'server_error', code: 'upstream_connection_failed', message: undefined, param: null });
      assert.equal(error.error.message, error.message);
      assert.equal(events.at(-1)!.response.status, 'failed');

      upstream.enqueue({ sse: textStream('Hello world').slice(0, 2), done: false, destroyAfterBytes: 10_000 });
      await assert.rejects(collect(client.responses.stream({ model: 'test/chat', input: 'x', store: false })), (err: unknown) => {
        assert.ok(err instanceof OpenAI.APIError);
        assert.equal(err.code, 'upstream_connection_failed');
        return true;
      });
    });

    test('a response stored by an older gateway (without the settings) is completed on GET', async () => {
      upstream.enqueue(textJson('Old.'));
      const res = (await client.responses.create({ model: 'test/chat', input: 'x', tools: [bareToolParam] })) as unknown as Json;
      // Rewrite the stored row in the shape earlier versions kept.
      const row = await gw.store.db.selectFrom('stored_responses').select('body').where('id', '=', res.id).executeTakeFirstOrThrow();
      const stored = JSON.parse(row.body) as Json;
      for (const k of Object.keys(DEFAULT_SETTINGS)) delete stored.response[k];
      delete stored.response.usage;
      stored.response.tools = [bareTool];
      await gw.store.db.updateTable('stored_responses').set({ body: JSON.stringify(stored) }).where('id', '=', res.id).execute();
      const got = (await client.responses.retrieve(res.id)) as unknown as Json;
      assertConforms(got, 'GET of an old row');
      assert.deepEqual(settingsOf(got), DEFAULT_SETTINGS);
      assert.equal(got.usage, null);
      assert.equal(got.output_text, 'Old.');
    });
  });

  describe('native Responses lane (the events and body are re-encoded by the gateway)', () => {
    const usage = { input_tokens: 30, input_tokens_details: { cached_tokens: 8 }, output_tokens: 12, output_tokens_details: { reasoning_tokens: 5 }, total_tokens: 42 };
    const upstreamResponse = (status: string, output: Json[]) => ({ id: 'resp_up1', object: 'response', created_at: 1, status, model: 'gpt-native', output, usage });
    const message = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Cold.', annotations: [] }] };
    const callItem = { id: 'fc_up', type: 'function_call', call_id: 'call_n1', name: 'lookup', arguments: '{"q":"Oslo"}', status: 'completed' };

    test('non-streamed, with a tool and client settings', async () => {
      upstream.enqueue({ json: upstreamResponse('completed', [message]) });
      const res = (await client.responses.create({ model: 'test/native', input: [{ role: 'user', content: [{ type: 'input_text', text: 'Weather?' }, { type: 'input_image', image_url: PNG, detail: 'auto' }] }], tools: [bareToolParam], prompt_cache_key: 'k1', store: false })) as unknown as Json;
      assertConforms(res, 'native body');
      assert.equal(res.output_text, 'Cold.');
      assert.equal(res.prompt_cache_key, 'k1');
      assert.deepEqual(res.tools, [{ ...bareTool, description: null, strict: null }]);
      // The upstream gets the client's tools as sent.
      assert.deepEqual((upstream.requests.at(-1)!.json as Json).tools, [bareTool]);
    });

    test('streamed function call, then previous_response_id', async () => {
      const events = [
        { type: 'response.created', response: upstreamResponse('in_progress', []), sequence_number: 0 },
        { type: 'response.output_item.added', output_index: 0, item: { ...callItem, arguments: '', status: 'in_progress' }, sequence_number: 1 },
        { type: 'response.function_call_arguments.delta', item_id: 'fc_up', output_index: 0, delta: '{"q":"Oslo"}', sequence_number: 2 },
        { type: 'response.output_item.done', output_index: 0, item: callItem, sequence_number: 3 },
        { type: 'response.completed', response: upstreamResponse('completed', [callItem]), sequence_number: 4 },
      ].map((e) => JSON.stringify(e));
      upstream.enqueue({ sse: events, framing: 'anthropic' });
      const seen = await collect(client.responses.stream({ model: 'test/native', input: 'Weather in Oslo?', tools: [strictTool, bareToolParam] }));
      assertEventsConform(seen);
      const first = seen.at(-1)!.response as Json;
      assert.equal(first.output[0].call_id, 'call_n1');
      assert.deepEqual(settingsOf(first), DEFAULT_SETTINGS);

      upstream.enqueue({ json: upstreamResponse('completed', [message]) });
      const next = (await client.responses.create({ model: 'test/native', input: [{ type: 'function_call_output', call_id: 'call_n1', output: '-5C' }], previous_response_id: first.id })) as unknown as Json;
      assertConforms(next, 'native continuation');
      assert.equal(next.previous_response_id, first.id);
      assertConforms(await client.responses.retrieve(next.id), 'GET native continuation');
    });
  });
});
