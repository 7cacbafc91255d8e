/**
 * Provider kind `bedrock` with the rest of the gateway: one model served by a Bedrock endpoint and
 * a Vertex AI one (Claude on both), offline against the fakes of test/helpers/bedrock-fake.ts and
 * vertex-fake.ts. A throttled Bedrock endpoint (ThrottlingException, HTTP 429; and an in-stream
 * throttlingException before content on the Messages lane) fails over to the Vertex endpoint
 * within one request; the other client APIs (Responses, legacy completions) reach Bedrock
 * through translation to Converse.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startBedrockFake, type BedrockFake } from '../helpers/bedrock-fake.js';
import { startVertexFake, type VertexFake } from '../helpers/vertex-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const AKID = 'AKIDTESTBEDROCKFALL1';
const SECRET = 'test-secret-key-for-the-bedrock-fallback';

let bedrock: BedrockFake;
let vertex: VertexFake;
let gw: TestGateway;
let openai: OpenAI;
let anthropic: Anthropic;

before(async () => {
  bedrock = await startBedrockFake();
  bedrock.credentials.set(AKID, { secretAccessKey: SECRET });
  vertex = await startVertexFake();
  const dir = mkdtempSync(path.join(tmpdir(), 'op-aws-'));
  process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(dir, 'credentials');
  process.env.AWS_CONFIG_FILE = path.join(dir, 'config');
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  delete process.env.AWS_PROFILE;
  process.env.AWS_ACCESS_KEY_ID = AKID;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET;
  gw = await startGateway({
    providers: [
      { id: 'br', kind: 'bedrock', base_url: bedrock.origin, bedrock: { region: 'us-east-1' } },
      { id: 'vx', kind: 'vertex', base_url: vertex.origin, vertex: { project: 'proj-1', publisher: 'anthropic', key_file: vertex.externalAccountFile() } },
    ],
    models: [
      {
        id: 'anthropic/claude-sonnet-4.5',
        context_length: 200_000,
        endpoints: [
          { provider: 'br', upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
          { provider: 'vx', upstream_model: 'claude-sonnet-4-5@20250929', vertex: { location: 'us-east5' } },
        ],
      },
      { id: 'amazon/nova-pro', context_length: 300_000, endpoints: [{ provider: 'br', upstream_model: 'amazon.nova-pro-v1:0' }] },
    ],
  }, { random: () => 0 }); // weighted-random routing picks the first listed endpoint first
  openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: gw.origin, apiKey: gw.adminKey, maxRetries: 0 });
});

after(async () => {
  await gw.close();
  await bedrock.close();
  await vertex.close();
});

async function lastAttempts(): Promise<Json[]> {
  await gw.flush();
  const rows = await gw.store.db.selectFrom('generations').selectAll().execute();
  return (JSON.parse(String((rows.at(-1) as Json).detail)) as Json).attempts as Json[];
}

describe('fallback from a throttled Bedrock endpoint to a Vertex one', () => {
  test('openai SDK chat: a ThrottlingException 429 from Bedrock, the answer from Claude on Vertex, in one request', async () => {
    bedrock.reply({ status: 429, error: { type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' } });
    const res = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Claude on Vertex.');
    assert.equal(bedrock.calls.at(-1)!.operation, 'converse');
    assert.equal(vertex.calls.at(-1)!.method, 'rawPredict');
    assert.deepEqual((await lastAttempts()).map((a) => [a.provider, a.status, a.error_code]), [['br', 429, 'upstream_rate_limited'], ['vx', 200, null]]);
  });

  test('Anthropic SDK stream on /v1/messages: an in-stream throttlingException on InvokeModelWithResponseStream, then Vertex\'s :streamRawPredict', async () => {
    bedrock.reply({ events: [{ throttlingException: { message: 'Too many tokens, please wait before trying again.' } }] });
    const msg = await anthropic.messages.stream({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.equal(msg.content[0]?.type === 'text' ? msg.content[0].text : '', 'Hello from Claude on Vertex.');
    assert.equal(bedrock.calls.at(-1)!.operation, 'invoke-with-response-stream');
    assert.equal(vertex.calls.at(-1)!.method, 'streamRawPredict');
    assert.deepEqual((await lastAttempts()).map((a) => [a.provider, a.error_code]), [['br', 'upstream_rate_limited'], ['vx', null]]);
  });
});

describe('the other client APIs through Converse', () => {
  test('Responses (openai SDK): translated to Converse, the answer as output_text', async () => {
    const res = await openai.responses.create({ model: 'amazon/nova-pro', input: 'hi', instructions: 'Be brief.' });
    assert.equal(res.output_text, 'Hello from Bedrock.');
    assert.deepEqual(bedrock.calls.at(-1)!.body.system, [{ text: 'Be brief.' }]);
    assert.equal(bedrock.calls.at(-1)!.operation, 'converse');
  });

  test('Responses stream: the ConverseStream text as response.output_text.delta events', async () => {
    const stream = await openai.responses.create({ model: 'amazon/nova-pro', input: 'hi', stream: true });
    let text = '';
    for await (const ev of stream) if (ev.type === 'response.output_text.delta') text += ev.delta;
    assert.equal(text, 'Hello from Bedrock.');
    assert.equal(bedrock.calls.at(-1)!.operation, 'converse-stream');
  });

  test('legacy completions: the prompt as a user message', async () => {
    const res = await openai.completions.create({ model: 'amazon/nova-pro', prompt: 'Say hello', max_tokens: 20 });
    assert.equal(res.choices[0]?.text, 'Hello from Bedrock.');
    assert.deepEqual(bedrock.calls.at(-1)!.body.messages, [{ role: 'user', content: [{ text: 'Say hello' }] }]);
    assert.equal(bedrock.calls.at(-1)!.body.inferenceConfig.maxTokens, 20);
  });
});
