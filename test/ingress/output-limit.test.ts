/**
 * Agent clients and endpoints' output caps (issue 18 item 9): Claude Code sends `max_tokens:
 * 32000`; an endpoint whose `max_completion_tokens` is lower is excluded, and when nothing is
 * left the Messages API answers 400 `invalid_request_error` explaining why (not a 404
 * `not_found_error`, which Claude Code shows as "the model may not exist"). With
 * `output_limit: clamp` (model or endpoint) the request goes with the limit lowered to the cap,
 * a warning in the generation record, on the translated lane and the Messages pass-through lane.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { parseConfig } from '../../src/config/load.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CHAT_ANSWER = { json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } };
const MESSAGE = { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-up', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } };
const MESSAGE_EVENTS = [
  { type: 'message_start', message: { ...MESSAGE, content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 0 } } },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'ok' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } },
  { type: 'message_stop' },
].map((e) => JSON.stringify(e));
const CAP = 8192;
const EXPLAINED = `no endpoint can serve this request for model "test/capped": oai/gpt-up: output limit 32000 exceeds its max_completion_tokens ${CAP}; lower the output limit, or have the operator set output_limit: clamp on the model to send at most its max_completion_tokens`;

describe('output limits above an endpoint\'s max_completion_tokens', () => {
  let gw: TestGateway;
  let oai: Upstream;
  let anth: Upstream;
  let anthropic: Anthropic;
  let openai: OpenAI;
  before(async () => {
    oai = await startUpstream();
    anth = await startUpstream();
    const ep = (provider: string, upstream: string, extra: Json = {}) => ({ provider, upstream_model: upstream, max_completion_tokens: CAP, supported_parameters: ['max_tokens', 'temperature', 'tools', 'tool_choice'], ...extra });
    gw = await startGateway({
      providers: [
        { id: 'oai', kind: 'openai', base_url: oai.url, api_key: 'k' },
        { id: 'anth', kind: 'anthropic', base_url: anth.url, api_key: 'k' },
      ],
      models: [
        { id: 'test/capped', context_length: 200000, aliases: ['claude-sonnet-4-5'], endpoints: [ep('oai', 'gpt-up')] },
        { id: 'test/clamped', context_length: 200000, output_limit: 'clamp', endpoints: [ep('oai', 'gpt-up')] },
        { id: 'test/native-capped', context_length: 200000, endpoints: [ep('anth', 'claude-up')] },
        { id: 'test/native-clamped', context_length: 200000, endpoints: [ep('anth', 'claude-up', { output_limit: 'clamp' })] },
        // The endpoint's setting wins over the model's.
        { id: 'test/clamp-but-not-here', context_length: 200000, output_limit: 'clamp', endpoints: [ep('oai', 'gpt-up', { output_limit: 'exclude' })] },
        { id: 'test/no-tools', context_length: 200000, endpoints: [ep('oai', 'gpt-up', { supported_parameters: ['max_tokens'] })] },
        { id: 'test/native-openai', context_length: 200000, output_limit: 'clamp', endpoints: [ep('oai', 'gpt-native', { supports_responses: true, supports_text_completions: true })] },
      ],
    });
    // An explicit timeout: the SDK refuses a non-streamed 32000-token request without one.
    anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0, timeout: 60_000 });
    openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await oai.close();
    await anth.close();
  });
  afterEach(() => {
    oai.requests.length = 0;
    anth.requests.length = 0;
  });

  const lastRecord = () => lastGeneration(gw);

  const refused = async (p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> => {
    const err = await p.then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    return err;
  };

  test('Messages, 32000 against max_completion_tokens 8192: 400 invalid_request_error with the explanation, nothing sent', async () => {
    for (const model of ['claude-sonnet-4-5', 'test/native-capped']) {
      const err = await refused(anthropic.messages.create({ model, max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }));
      assert.ok(err instanceof Anthropic.BadRequestError, `${model}: ${err.status}`);
      const body = err.error as Json;
      assert.equal(body.type, 'error');
      assert.equal(body.error.type, 'invalid_request_error');
      assert.equal(body.error.code, 'no_endpoint_available');
      assert.equal(body.error.param, 'max_tokens');
      const endpoint = model === 'claude-sonnet-4-5' ? 'oai/gpt-up' : 'anth/claude-up';
      const name = model === 'claude-sonnet-4-5' ? 'test/capped' : 'test/native-capped';
      assert.equal(body.error.message, EXPLAINED.replace('test/capped', name).replace('oai/gpt-up', endpoint));
      assert.deepEqual(body.error.metadata.excluded, [{ endpoint, model: name, reason: 'max_completion_tokens', detail: `output limit 32000 exceeds its max_completion_tokens ${CAP}` }]);
      const rec = await lastRecord();
      assert.equal(rec.http_status, 400);
      assert.equal(rec.error_code, 'no_endpoint_available');
    }
    // Streamed, as Claude Code asks: the same 400 before any event.
    const res = await fetch(`${gw.origin}/v1/messages?beta=true`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': gw.adminKey, 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 32000, stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as Json).error.type, 'invalid_request_error');
    assert.equal(oai.requests.length + anth.requests.length, 0);
  });

  test('Messages, an endpoint excluded for another request field (tools): 400 without param; an unknown model stays 404 not_found_error', async () => {
    const err = await refused(anthropic.messages.create({ model: 'test/no-tools', max_tokens: 100, tools: [{ name: 'w', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(err.status, 400);
    assert.equal((err.error as Json).error.type, 'invalid_request_error');
    assert.equal((err.error as Json).error.param, undefined);
    assert.equal((err.error as Json).error.message, 'no endpoint can serve this request for model "test/no-tools": oai/gpt-up: does not support "tools"');
    const unknown = await refused(anthropic.messages.create({ model: 'nope/none', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }));
    assert.ok(unknown instanceof Anthropic.NotFoundError);
    assert.equal((unknown.error as Json).error.type, 'not_found_error');
  });

  test('chat and Responses keep their 404 no_endpoint_available (OpenRouter\'s answer), with the explanation', async () => {
    const chat = await openai.chat.completions.create({ model: 'test/capped', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }).then(() => undefined, (e: unknown) => e);
    assert.ok(chat instanceof OpenAI.NotFoundError);
    assert.equal(chat.code, 'no_endpoint_available');
    assert.equal(chat.message, `404 ${EXPLAINED}`);
    const responses = await openai.responses.create({ model: 'test/capped', max_output_tokens: 32000, input: 'hi' }).then(() => undefined, (e: unknown) => e);
    assert.ok(responses instanceof OpenAI.NotFoundError);
    assert.equal(responses.code, 'no_endpoint_available');
  });

  test('output_limit: clamp, translated lane (Messages → openai): 200, the upstream saw 8192, the record has the warning', async () => {
    oai.enqueue(CHAT_ANSWER);
    const msg = await anthropic.messages.create({ model: 'test/clamped', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'ok' }]);
    assert.equal((oai.requests[0]!.json as Json).max_completion_tokens, CAP);
    const rec = await lastRecord();
    assert.equal(rec.status, 'success');
    assert.deepEqual(rec.detail.warnings, [`max_tokens 32000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`]);
  });

  test('output_limit: clamp, Messages pass-through lane (→ anthropic), streamed and not: the body forwarded with max_tokens 8192', async () => {
    anth.enqueue({ json: MESSAGE }, { sse: MESSAGE_EVENTS, framing: 'anthropic' });
    const msg = await anthropic.messages.create({ model: 'test/native-clamped', max_tokens: 32000, stop_sequences: ['END'], messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(msg.content, [{ type: 'text', text: 'ok' }]);
    assert.deepEqual(anth.requests[0]!.json, { model: 'claude-up', max_tokens: CAP, stop_sequences: ['END'], messages: [{ role: 'user', content: 'hi' }] });
    const warning = `max_tokens 32000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`;
    assert.deepEqual((await lastRecord()).detail.warnings, [warning]);
    const streamed = await anthropic.messages.stream({ model: 'test/native-clamped', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.deepEqual(streamed.content, [{ type: 'text', text: 'ok' }]);
    assert.equal((anth.requests[1]!.json as Json).max_tokens, CAP);
    assert.deepEqual((await lastRecord()).detail.warnings, [warning]);
    // A thinking budget at or over the clamped cap is lowered under it (Anthropic: budget_tokens < max_tokens).
    anth.enqueue({ json: MESSAGE });
    await anthropic.messages.create({ model: 'test/native-clamped', max_tokens: 32000, thinking: { type: 'enabled', budget_tokens: 16000 }, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual((anth.requests[2]!.json as Json).thinking, { type: 'enabled', budget_tokens: CAP - 1 });
    assert.deepEqual((await lastRecord()).detail.warnings, [warning, `thinking.budget_tokens 16000 lowered to ${CAP - 1}, below the clamped max_tokens ${CAP}`]);
  });

  test('output_limit: clamp for chat and Responses too; a limit under the cap is left alone; the endpoint\'s exclude wins over the model\'s clamp', async () => {
    oai.enqueue(CHAT_ANSWER, CHAT_ANSWER, CHAT_ANSWER);
    await openai.chat.completions.create({ model: 'test/clamped', max_completion_tokens: 20000, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal((oai.requests[0]!.json as Json).max_completion_tokens, CAP);
    assert.deepEqual((await lastRecord()).detail.warnings, [`max_completion_tokens 20000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`]);
    const res = await openai.responses.create({ model: 'test/clamped', max_output_tokens: 32000, input: 'hi' });
    assert.equal(res.output_text, 'ok');
    assert.equal((oai.requests[1]!.json as Json).max_completion_tokens, CAP);
    assert.deepEqual((await lastRecord()).detail.warnings, [`max_output_tokens 32000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`]);
    await openai.chat.completions.create({ model: 'test/clamped', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal((oai.requests[2]!.json as Json).max_completion_tokens, 100);
    assert.deepEqual((await lastRecord()).detail.warnings, []);
    const err = await refused(anthropic.messages.create({ model: 'test/clamp-but-not-here', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }));
    assert.equal(err.status, 400);
    assert.equal(oai.requests.length, 3);
  });

  test('output_limit: clamp on the native Responses and legacy completions lanes: max_output_tokens / max_tokens lowered, with the warning', async () => {
    oai.enqueue(
      { json: { id: 'resp_1', object: 'response', status: 'completed', model: 'gpt-native', output: [{ type: 'message', id: 'm1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }], usage: { input_tokens: 5, output_tokens: 1, total_tokens: 6 } } },
      { json: { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'gpt-native', choices: [{ index: 0, text: 'ok', finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } },
    );
    const res = await openai.responses.create({ model: 'test/native-openai', max_output_tokens: 32000, input: 'hi' });
    assert.equal(res.output_text, 'ok');
    assert.equal(oai.requests[0]!.path, '/v1/responses');
    assert.equal((oai.requests[0]!.json as Json).max_output_tokens, CAP);
    assert.deepEqual((await lastRecord()).detail.warnings, [`max_output_tokens 32000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`]);
    const done = await openai.completions.create({ model: 'test/native-openai', max_tokens: 32000, prompt: 'hi', echo: false });
    assert.equal(done.choices[0]!.text, 'ok');
    assert.equal(oai.requests[1]!.path, '/v1/completions');
    assert.equal((oai.requests[1]!.json as Json).max_tokens, CAP);
    assert.deepEqual((await lastRecord()).detail.warnings, [`max_tokens 32000 lowered to the endpoint's max_completion_tokens ${CAP} (output_limit: clamp)`]);
  });

  test('config: output_limit takes exclude or clamp, on a model or an endpoint', () => {
    const cfg = (extra: Json) => ({ providers: [{ id: 'p', kind: 'openai', base_url: 'http://127.0.0.1:9/v1' }], models: [{ id: 'a/b', context_length: 100, endpoints: [{ provider: 'p', upstream_model: 'm', ...extra }] }] });
    assert.equal(parseConfig(cfg({ output_limit: 'clamp' }), 'test.yaml').models[0]!.endpoints[0]!.output_limit, 'clamp');
    assert.throws(() => parseConfig(cfg({ output_limit: 'lower' }), 'test.yaml'), /models\[0\]\.endpoints\[0\]\.output_limit: .*'exclude' \| 'clamp'/);
  });
});
