/**
 * Provider kind `bedrock`, the Messages API's pass-through lane to Claude on Bedrock
 * (InvokeModel / InvokeModelWithResponseStream with the Messages body), offline against the fake
 * Bedrock Runtime of test/helpers/bedrock-fake.ts (signatures recomputed, the Messages body
 * checked as Bedrock checks it):
 *
 * - cross-check: `@anthropic-ai/bedrock-sdk` (static test keys) is accepted by the same fake
 *   (create and stream), its raw `:` in the path signed as it is sent;
 * - through the gateway with the Anthropic SDK: a streamed answer relayed as Anthropic SSE (the
 *   `chunk` frames decoded), the thinking signature intact across two turns, betas in the body's
 *   `anthropic_beta`, `anthropic_version: bedrock-2023-05-31`, no `model` / `stream`;
 *   usage in the record; an in-stream throttlingException before content failing over to the
 *   next endpoint; count_tokens through Bedrock's CountTokens; a non-Anthropic model on
 *   /v1/messages translated to Converse (and counted by the gateway's estimate).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { claudeEvents, startBedrockFake, type BedrockFake } from '../helpers/bedrock-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const AKID = 'AKIDTESTBEDROCKMSG01';
const SECRET = 'test-secret-key-for-the-bedrock-messages-lane';
const CLAUDE = 'global.anthropic.claude-sonnet-4-5-20250929-v1:0';
const SIGNATURE = 'EqQBCkYIBxABGAIiQL0vRTeXr1Y0f4Zk+BedrockSignature==';

let fake: BedrockFake;
let gw: TestGateway;
let anthropic: Anthropic;

before(async () => {
  fake = await startBedrockFake();
  fake.credentials.set(AKID, { secretAccessKey: SECRET });
  const dir = mkdtempSync(path.join(tmpdir(), 'op-aws-'));
  process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(dir, 'credentials');
  process.env.AWS_CONFIG_FILE = path.join(dir, 'config');
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  delete process.env.AWS_PROFILE;
  delete process.env.AWS_BEARER_TOKEN_BEDROCK;
  process.env.AWS_ACCESS_KEY_ID = AKID;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET;
  gw = await startGateway({
    providers: [
      { id: 'br-a', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1' } },
      { id: 'br-b', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-west-2' } },
    ],
    models: [
      {
        id: 'anthropic/claude-sonnet-4.5',
        context_length: 200_000,
        endpoints: [
          { provider: 'br-a', upstream_model: CLAUDE, pricing: { prompt: 3, completion: 15 } },
          { provider: 'br-b', upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', pricing: { prompt: 3, completion: 15 } },
        ],
      },
      { id: 'amazon/nova-pro', context_length: 300_000, endpoints: [{ provider: 'br-a', upstream_model: 'amazon.nova-pro-v1:0' }] },
    ],
  }, { random: () => 0 }); // weighted-random routing picks the first listed endpoint first
  anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
});

after(async () => {
  await gw.close();
  await fake.close();
});

const lastCall = () => fake.calls.at(-1)!;

async function lastRecord(): Promise<Json> {
  await gw.flush();
  const rows = await gw.store.db.selectFrom('generations').selectAll().execute();
  return rows.at(-1) as Json;
}

describe('the fake against @anthropic-ai/bedrock-sdk (cross-check)', () => {
  const client = () => new AnthropicBedrock({ awsAccessKey: AKID, awsSecretKey: SECRET, awsRegion: 'us-east-1', baseURL: fake.origin, apiKey: null, maxRetries: 0 });

  test('messages.create: signed request accepted at /invoke with the Messages body', async () => {
    const msg = await client().messages.create({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Claude on Bedrock.');
    const call = lastCall();
    assert.equal(call.principal, AKID);
    assert.equal(call.operation, 'invoke');
    assert.equal(call.modelId, CLAUDE);
    assert.equal('model' in call.body, false);
    assert.equal(typeof call.body.anthropic_version, 'string');
  });

  test('messages.stream: the chunk frames the fake writes (5-byte pieces) are read as the Anthropic events', async () => {
    fake.reply({ events: claudeEvents('Streamed from Bedrock.'), split: 5 });
    const msg = await client().messages.stream({ model: CLAUDE, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Streamed from Bedrock.');
    assert.equal(lastCall().operation, 'invoke-with-response-stream');
  });
});

describe('Anthropic SDK on /v1/messages through the gateway to Claude on Bedrock', () => {
  test('the pass-through lane: stream relayed as Anthropic SSE, thinking signature intact across two turns, betas in the body', async () => {
    fake.reply({
      split: 9,
      events: [
        { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 30, output_tokens: 1 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two plus two is four.' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: SIGNATURE } },
        { type: 'content_block_stop', index: 0 },
        { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: '4' } },
        { type: 'content_block_stop', index: 1 },
        { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 12 } },
        { type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 30, outputTokenCount: 12, invocationLatency: 900, firstByteLatency: 300 } },
      ],
    });
    const first = await anthropic.messages
      .stream(
        { model: 'anthropic/claude-sonnet-4.5', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: '2+2?' }] },
        { headers: { 'anthropic-beta': 'interleaved-thinking-2025-05-14' } },
      )
      .finalMessage();
    const thinking = first.content.find((b) => b.type === 'thinking');
    assert.equal(thinking?.type === 'thinking' ? thinking.signature : '', SIGNATURE);
    assert.equal(first.content.find((b) => b.type === 'text')?.type === 'text' ? (first.content.find((b) => b.type === 'text') as { text: string }).text : '', '4');
    let call = lastCall();
    assert.equal(call.operation, 'invoke-with-response-stream');
    assert.equal(call.modelId, CLAUDE);
    assert.equal(call.principal, AKID);
    assert.equal(call.body.anthropic_version, 'bedrock-2023-05-31');
    assert.deepEqual(call.body.anthropic_beta, ['interleaved-thinking-2025-05-14']);
    assert.equal('model' in call.body, false);
    assert.equal('stream' in call.body, false);
    const record = await lastRecord();
    assert.deepEqual([record.provider, record.prompt_tokens, record.completion_tokens, record.api], ['br-a', 30, 12, 'messages']);

    const second = await anthropic.messages.create({
      model: 'anthropic/claude-sonnet-4.5',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: '2+2?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'And 3+3?' },
      ],
    });
    assert.equal(second.content[0]?.type === 'text' ? second.content[0].text : '', 'Hello from Claude on Bedrock.');
    call = lastCall();
    assert.equal(call.operation, 'invoke');
    assert.deepEqual(call.body.messages[1].content[0], { type: 'thinking', thinking: 'Two plus two is four.', signature: SIGNATURE });
  });

  test('the relayed stream is the Anthropic events themselves (named by type), not Bedrock\'s chunk frames', async () => {
    const res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': gw.adminKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    const names = [...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.doesNotMatch(text, /"bytes"/);
  });

  test('an in-stream throttlingException before any content fails over to the next Bedrock endpoint', async () => {
    fake.reply({ events: [{ throttlingException: { message: 'Too many requests, please wait before trying again.' } }] });
    const before = fake.calls.length;
    const msg = await anthropic.messages.stream({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Claude on Bedrock.');
    assert.deepEqual(fake.calls.slice(before).map((c) => [c.modelId, c.region]), [[CLAUDE, 'us-east-1'], ['us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'us-west-2']]);
    const detail = JSON.parse(String((await lastRecord()).detail)) as Json;
    assert.deepEqual((detail.attempts as Json[]).map((a) => [a.provider, a.error_code]), [['br-a', 'upstream_rate_limited'], ['br-b', null]]);
  });

  test('a modelStreamErrorException after content: the relayed events so far, then an Anthropic error event; the record has the error', async () => {
    const events = claudeEvents('Partial answer');
    fake.reply({ events: [...events.slice(0, 3), { modelStreamErrorException: { message: 'The model stream failed.', originalStatusCode: 500 } }] });
    const res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': gw.adminKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    assert.deepEqual([...text.matchAll(/^event: (.+)$/gm)].map((m) => m[1]), ['message_start', 'content_block_start', 'content_block_delta', 'error']);
    const error = JSON.parse(/event: error\ndata: (.+)/.exec(text)![1]!) as Json;
    assert.equal(error.type, 'error');
    assert.match(String(error.error?.message), /The model stream failed/);
    const record = await lastRecord();
    assert.equal(record.error_code, 'upstream_error');
  });

  test('count_tokens: Bedrock\'s CountTokens with the InvokeModel body base64 in input.invokeModel; its inputTokens answered', async () => {
    const res = await anthropic.messages.countTokens({ model: 'anthropic/claude-sonnet-4.5', messages: [{ role: 'user', content: 'one two three' }] });
    assert.equal(res.input_tokens, 103);
    const call = lastCall();
    assert.equal(call.operation, 'count-tokens');
    assert.equal(call.modelId, CLAUDE);
    const inner = JSON.parse(Buffer.from(String(call.body.input.invokeModel.body), 'base64').toString('utf8')) as Json;
    assert.deepEqual([inner.anthropic_version, 'model' in inner, inner.messages], ['bedrock-2023-05-31', false, [{ role: 'user', content: 'one two three' }]]);
  });

  test('count_tokens for a non-Anthropic model: no upstream call, the gateway\'s estimate', async () => {
    const before = fake.calls.length;
    const res = await anthropic.messages.countTokens({ model: 'amazon/nova-pro', messages: [{ role: 'user', content: 'one two three' }] });
    assert.equal(typeof res.input_tokens, 'number');
    assert.ok(res.input_tokens > 0 && res.input_tokens < 50, String(res.input_tokens));
    assert.equal(fake.calls.length, before);
  });

  test('a non-Anthropic model on /v1/messages is translated to Converse', async () => {
    const msg = await anthropic.messages.create({ model: 'amazon/nova-pro', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Bedrock.');
    assert.equal(lastCall().operation, 'converse');
    assert.deepEqual(lastCall().body.messages, [{ role: 'user', content: [{ text: 'hi' }] }]);
  });
});
