/**
 * Provider kind `bedrock` end to end, offline: the fake Bedrock Runtime of
 * test/helpers/bedrock-fake.ts (every SigV4 signature recomputed with the test credentials,
 * Bedrock API keys as bearer) behind the gateway, reached with the official SDKs.
 *
 * - cross-check: `@aws-sdk/client-bedrock-runtime` (ConverseCommand, ConverseStreamCommand, static
 *   test credentials, HTTP/1.1 handler) is accepted by the same fake and reads the same answers; a
 *   wrong secret gets Bedrock's own 403 body;
 * - through the gateway (credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY of this process,
 *   read by the default chain): the openai SDK's chat, stream (recorded ConverseStream events
 *   framed as event-stream messages, written in 7-byte pieces), a tool call round trip, usage and
 *   cost in the generation record with the AWS request id; inference-profile ids in the path;
 *   a Bedrock API key as bearer; a ThrottlingException (HTTP 429 and in-stream before content)
 *   failing over to the second endpoint within one request; an in-stream exception after content
 *   ending the client's stream with an error; a ValidationException as a 400 with code and param;
 *   a wrong secret (an `aws_profile` of a credentials file) as an auth error, not a 500.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { fixturesAvailable, loadChunks, loadJson } from '../helpers/replay-upstream.js';
import { CONVERSE_TEXT, fakeVector, SIGNATURE_MISMATCH, startBedrockFake, type BedrockFake } from '../helpers/bedrock-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const AKID = 'AKIDTESTBEDROCK0001';
const SECRET = 'test-secret-key-for-the-fake-bedrock-0001';
const API_KEY = 'bedrock-api-key-test-value-0001';
const SUPPORTED = ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'tools', 'tool_choice', 'reasoning'];
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const REC = 'amazon-bedrock';
const skipRecorded = fixturesAvailable() ? false : 'the recorded fixtures (../shared/fixtures/recorded) are absent';

let fake: BedrockFake;
let gw: TestGateway;
let openai: OpenAI;

before(async () => {
  fake = await startBedrockFake();
  fake.credentials.set(AKID, { secretAccessKey: SECRET });
  fake.apiKeys.add(API_KEY);
  // The default chain of this process: the env keys; no shared files, no instance metadata.
  const dir = mkdtempSync(path.join(tmpdir(), 'op-aws-'));
  const credentialsFile = path.join(dir, 'credentials');
  writeFileSync(credentialsFile, `[wrong-secret]\naws_access_key_id = ${AKID}\naws_secret_access_key = not-the-secret-of-this-key\n`);
  process.env.AWS_SHARED_CREDENTIALS_FILE = credentialsFile;
  process.env.AWS_CONFIG_FILE = path.join(dir, 'config');
  process.env.AWS_EC2_METADATA_DISABLED = 'true';
  delete process.env.AWS_PROFILE;
  delete process.env.AWS_SESSION_TOKEN;
  process.env.AWS_ACCESS_KEY_ID = AKID;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET;
  gw = await startGateway({
    providers: [
      { id: 'br-east', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1' } },
      { id: 'br-key', kind: 'bedrock', base_url: fake.origin, api_key: API_KEY, bedrock: { region: 'us-west-2' } },
      { id: 'br-keys', kind: 'bedrock', base_url: fake.origin, api_keys: [{ label: 'revoked', key: 'bedrock-api-key-revoked-0002' }, { label: 'team', key: API_KEY }], bedrock: { region: 'us-west-2' } },
      { id: 'br-wrong', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1', aws_profile: 'wrong-secret' } },
    ],
    models: [
      {
        id: 'anthropic/claude-sonnet-4.5',
        context_length: 200_000,
        endpoints: [{ provider: 'br-east', upstream_model: CLAUDE, supported_parameters: SUPPORTED, pricing: { prompt: 3, completion: 15 }, bedrock: { region: 'eu-west-1' } }],
      },
      {
        id: 'meta/llama-two',
        context_length: 128_000,
        endpoints: [
          { provider: 'br-east', upstream_model: 'meta.llama3-3-70b-instruct-v1:0', supported_parameters: SUPPORTED },
          { provider: 'br-key', upstream_model: 'us.meta.llama3-3-70b-instruct-v1:0', supported_parameters: SUPPORTED },
        ],
      },
      { id: 'amazon/nova-keys', context_length: 300_000, endpoints: [{ provider: 'br-keys', upstream_model: 'amazon.nova-pro-v1:0', supported_parameters: SUPPORTED }] },
      { id: 'amazon/nova-key', context_length: 300_000, architecture: { input_modalities: ['text', 'image', 'file'] }, endpoints: [{ provider: 'br-key', upstream_model: 'amazon.nova-pro-v1:0', supported_parameters: SUPPORTED }] },
      { id: 'amazon/titan-embed-text-v2', context_length: 8192, endpoints: [{ provider: 'br-east', upstream_model: 'amazon.titan-embed-text-v2:0', embeddings: true, max_embedding_inputs: 1, pricing: { prompt: 0.02 } }] },
      { id: 'cohere/embed-english-v3', context_length: 512, endpoints: [{ provider: 'br-key', upstream_model: 'cohere.embed-english-v3', embeddings: true }] },
      { id: 'amazon/nova-wrong', context_length: 300_000, endpoints: [{ provider: 'br-wrong', upstream_model: 'amazon.nova-pro-v1:0', supported_parameters: SUPPORTED }] },
    ],
  }, { random: () => 0 }); // weighted-random routing picks the first listed endpoint first
  openai = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
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

/** The recorded ConverseStream lines, as wrapped events. */
const recorded = (name: string): Json[] => loadChunks(`${REC}/${name}`).map((l) => JSON.parse(l) as Json);

const sdkClient = (secretAccessKey: string) =>
  new BedrockRuntimeClient({
    region: 'us-east-1',
    endpoint: fake.origin,
    credentials: { accessKeyId: AKID, secretAccessKey },
    requestHandler: new NodeHttpHandler(), // the client speaks HTTP/2 by default; the fake is HTTP/1.1
    maxAttempts: 1,
  });

describe('the fake against the official SDK (cross-check)', () => {
  test('ConverseCommand with an inference-profile id is accepted: signature recomputed, model id decoded from the path', async () => {
    const out = await sdkClient(SECRET).send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 10 } }));
    assert.equal(out.output?.message?.content?.[0]?.text, 'Hello from Bedrock.');
    assert.equal(out.usage?.inputTokens, 12);
    const call = lastCall();
    assert.equal(call.principal, AKID);
    assert.equal(call.modelId, CLAUDE);
    assert.equal(call.path, `/model/${encodeURIComponent(CLAUDE)}/converse`);
    assert.equal(call.region, 'us-east-1');
  });

  test('ConverseStreamCommand reads the recorded stream the fake frames, cut in 7-byte writes', { skip: skipRecorded }, async () => {
    fake.reply({ events: recorded('amazon-bedrock-text.chunks.txt'), split: 7 });
    const out = await sdkClient(SECRET).send(new ConverseStreamCommand({ modelId: 'amazon.nova-pro-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    let text = '';
    let stop: string | undefined;
    for await (const ev of out.stream!) {
      if (ev.contentBlockDelta?.delta?.text) text += ev.contentBlockDelta.delta.text;
      if (ev.messageStop) stop = ev.messageStop.stopReason;
    }
    const expected = recorded('amazon-bedrock-text.chunks.txt').map((e) => e.contentBlockDelta?.delta?.text ?? '').join('');
    assert.equal(text, expected);
    assert.equal(stop, 'end_turn');
  });

  test('a wrong secret is refused with Bedrock\'s 403 InvalidSignatureException and its message', async () => {
    await assert.rejects(sdkClient('wrong-secret').send(new ConverseCommand({ modelId: CLAUDE, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })), (err: Json) => {
      assert.equal(err.name, 'InvalidSignatureException');
      assert.equal(err.$metadata?.httpStatusCode, 403);
      assert.equal(err.message, SIGNATURE_MISMATCH);
      return true;
    });
  });
});

describe('openai SDK through the gateway to Converse', () => {
  test('chat: the Converse body, the endpoint region in the signature, usage and cost in the record with the AWS request id', async () => {
    const res = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', max_tokens: 50, temperature: 0.2, stop: ['END'], messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
    assert.equal(res.choices[0]?.finish_reason, 'stop');
    assert.deepEqual([res.usage?.prompt_tokens, res.usage?.completion_tokens], [12, 5]);
    const call = lastCall();
    assert.equal(call.operation, 'converse');
    assert.equal(call.modelId, CLAUDE);
    assert.equal(call.principal, AKID);
    assert.equal(call.region, 'eu-west-1');
    assert.deepEqual(call.body, {
      messages: [{ role: 'user', content: [{ text: 'hi' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, stopSequences: ['END'] },
    });
    const record = await lastRecord();
    assert.equal(record.provider, 'br-east');
    assert.equal(record.native_finish_reason, 'end_turn');
    assert.deepEqual([record.prompt_tokens, record.completion_tokens, record.cached_tokens, record.usage_source], [12, 5, 0, 'upstream']);
    // 12 × $3/M + 5 × $15/M = $0.000111 = 111_000_000 pico-dollars
    assert.equal(Number(record.cost_pico), 111_000_000);
    const detail = JSON.parse(String(record.detail)) as Json;
    assert.deepEqual(detail.provider_metadata, { aws_request_id: call.requestId, bedrock_latency_ms: 321 });
  });

  test('stream: the recorded ConverseStream, framed and cut in 7-byte writes, arrives in order with usage at the end', { skip: skipRecorded }, async () => {
    const events = recorded('amazon-bedrock-text.chunks.txt');
    fake.reply({ events, split: 7 });
    const stream = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'count' }] });
    let text = '';
    let finish: string | null | undefined;
    let usage: Json | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, events.map((e) => e.contentBlockDelta?.delta?.text ?? '').join(''));
    assert.equal(finish, 'stop');
    const meta = events.find((e) => e.metadata)!.metadata.usage as Json;
    assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens], [meta.inputTokens, meta.outputTokens]);
    assert.equal(lastCall().operation, 'converse-stream');
    assert.equal(lastCall().headers.accept, 'application/vnd.amazon.eventstream');
  });

  test('stream with reasoning: reasoning text and the signature reach the client (reasoning_details), split at every byte', { skip: skipRecorded }, async () => {
    const events = recorded('amazon-bedrock-reasoning.chunks.txt');
    fake.reply({ events, split: 1 });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'anthropic/claude-sonnet-4.5', stream: true, reasoning: { max_tokens: 2000 }, max_tokens: 4000, messages: [{ role: 'user', content: 'How many r in strawberry?' }] }),
    });
    const chunks = (await res.text()).split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as Json);
    const reasoning = chunks.map((c) => c.choices?.[0]?.delta?.reasoning ?? '').join('');
    const signature = events.map((e) => e.contentBlockDelta?.delta?.reasoningContent?.signature ?? '').join('');
    assert.equal(reasoning, events.map((e) => e.contentBlockDelta?.delta?.reasoningContent?.text ?? '').join(''));
    const details = chunks.flatMap((c) => (c.choices?.[0]?.delta?.reasoning_details ?? []) as Json[]).filter((d) => d.signature);
    assert.equal(details[0]?.signature, signature);
    assert.equal(details[0]?.format, 'amazon-bedrock-converse-v1');
    assert.deepEqual(lastCall().body.additionalModelRequestFields, { thinking: { type: 'enabled', budget_tokens: 2000, display: 'summarized' } });
    assert.equal(lastCall().body.inferenceConfig.maxTokens, 4000);
  });

  test('tools: a recorded toolUse answer becomes a tool call; the round trip sends toolUse, toolResult and the toolConfig', { skip: skipRecorded }, async () => {
    fake.reply({ json: loadJson(`${REC}/amazon-bedrock-tool-call.1.json`) });
    const parameters = { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] };
    const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [{ type: 'function', function: { name: 'bash', description: 'Run a command', parameters } }];
    const first = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', tools, tool_choice: 'required', messages: [{ role: 'user', content: 'list files' }] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    assert.equal(first.choices[0]?.finish_reason, 'tool_calls');
    assert.deepEqual([call?.id, call?.type === 'function' ? call.function.name : '', call?.type === 'function' ? call.function.arguments : ''], ['tool-use-id', 'bash', '{"command":"ls -l"}']);
    assert.deepEqual(lastCall().body.toolConfig, { tools: [{ toolSpec: { name: 'bash', description: 'Run a command', inputSchema: { json: parameters } } }], toolChoice: { any: {} } });

    const second = await openai.chat.completions.create({
      model: 'anthropic/claude-sonnet-4.5',
      tools,
      messages: [{ role: 'user', content: 'list files' }, first.choices[0]!.message, { role: 'tool', tool_call_id: 'tool-use-id', content: 'a.txt\nb.txt' }],
    });
    assert.equal(second.choices[0]?.message.content, 'Hello from Bedrock.');
    assert.deepEqual(lastCall().body.messages, [
      { role: 'user', content: [{ text: 'list files' }] },
      { role: 'assistant', content: [{ toolUse: { toolUseId: 'tool-use-id', name: 'bash', input: { command: 'ls -l' } } }] },
      { role: 'user', content: [{ toolResult: { toolUseId: 'tool-use-id', content: [{ text: 'a.txt\nb.txt' }] } }] },
    ]);
  });

  test('streamed tool call: the recorded toolUse deltas are joined into one call with its arguments', { skip: skipRecorded }, async () => {
    fake.reply({ events: recorded('amazon-bedrock-tool-call.1.chunks.txt'), split: 5 });
    const stream = await openai.chat.completions.create({ model: 'anthropic/claude-sonnet-4.5', stream: true, tools: [{ type: 'function', function: { name: 'test-tool', parameters: { type: 'object', properties: { value: { type: 'string' } } } } }], messages: [{ role: 'user', content: 'go' }] });
    let args = '';
    let name = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const tc = chunk.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name = tc.function.name;
      args += tc?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.deepEqual([name, args, finish], ['test-tool', '{"value":"Sparkle Day"}', 'tool_calls']);
  });

  test('a Bedrock API key goes as Authorization: Bearer (no signature) to the endpoint\'s model', async () => {
    const res = await openai.chat.completions.create({ model: 'amazon/nova-key', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
    assert.equal(lastCall().principal, `bearer:${API_KEY}`);
    assert.equal(lastCall().headers['x-amz-date'], undefined);
  });

  test('api_keys: each key is sent as its own bearer; a refused key cools and the same endpoint is retried with the other', async () => {
    const before = fake.calls.length;
    const labels: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await openai.chat.completions.create({ model: 'amazon/nova-keys', messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
      labels.push(String((await lastGeneration(gw)).detail.credential));
    }
    assert.deepEqual(labels, ['team', 'team', 'team', 'team']);
    const principals = fake.calls.slice(before).map((c) => c.principal);
    // The revoked key is tried at most once (the draw is by weight; refused, it cools for 60 s).
    const team = `bearer:${API_KEY}`;
    assert.ok(
      JSON.stringify(principals) === JSON.stringify([team, team, team, team]) || JSON.stringify(principals) === JSON.stringify(['refused', team, team, team, team]),
      JSON.stringify(principals),
    );
  });
});

describe('embeddings through InvokeModel', () => {
  test('Titan: one inputText per call (three inputs, three calls), dimensions sent, the upstream\'s token counts in the usage', async () => {
    const before = fake.calls.length;
    const res = await openai.embeddings.create({ model: 'amazon/titan-embed-text-v2', input: ['one two', 'three', 'four five six'], dimensions: 4, encoding_format: 'float' });
    assert.deepEqual(res.data.map((d) => d.embedding), ['one two', 'three', 'four five six'].map((t) => fakeVector(t, 4)));
    assert.equal(res.usage.prompt_tokens, 6);
    assert.deepEqual(fake.calls.slice(before).map((c) => [c.operation, c.modelId, c.body]), [
      ['invoke', 'amazon.titan-embed-text-v2:0', { inputText: 'one two', dimensions: 4 }],
      ['invoke', 'amazon.titan-embed-text-v2:0', { inputText: 'three', dimensions: 4 }],
      ['invoke', 'amazon.titan-embed-text-v2:0', { inputText: 'four five six', dimensions: 4 }],
    ]);
    assert.ok(fake.calls.slice(before).every((c) => c.principal === AKID));
    const record = await lastRecord();
    assert.deepEqual([record.prompt_tokens, record.usage_source], [6, 'upstream']);
  });

  test('Cohere: the texts in one call with input_type; no token count in the body, so the usage is the gateway\'s estimate', async () => {
    const res = await openai.embeddings.create({ model: 'cohere/embed-english-v3', input: ['alpha', 'beta gamma'], encoding_format: 'float' });
    assert.deepEqual(res.data.map((d) => d.embedding), [fakeVector('alpha', 6), fakeVector('beta gamma', 6)]);
    assert.deepEqual(lastCall().body, { texts: ['alpha', 'beta gamma'], input_type: 'search_document' });
    assert.equal(lastCall().principal, `bearer:${API_KEY}`);
    assert.equal((await lastRecord()).usage_source, 'estimated');
  });
});

describe('Bedrock errors', () => {
  test('a ThrottlingException (HTTP 429) fails over to the second endpoint within the request', async () => {
    fake.reply({ status: 429, error: { type: 'ThrottlingException', message: 'Too many requests, please wait before trying again.' } });
    const before = fake.calls.length;
    const res = await openai.chat.completions.create({ model: 'meta/llama-two', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.choices[0]?.message.content, 'Hello from Bedrock.');
    assert.deepEqual(fake.calls.slice(before).map((c) => [c.modelId, c.principal]), [['meta.llama3-3-70b-instruct-v1:0', AKID], ['us.meta.llama3-3-70b-instruct-v1:0', `bearer:${API_KEY}`]]);
    const detail = JSON.parse(String((await lastRecord()).detail)) as Json;
    assert.deepEqual((detail.attempts as Json[]).map((a) => [a.provider, a.status, a.error_code]), [['br-east', 429, 'upstream_rate_limited'], ['br-key', 200, null]]);
  });

  test('an in-stream throttlingException before any content fails over to the second endpoint', async () => {
    fake.reply({ events: [{ messageStart: { role: 'assistant' } }, { throttlingException: { message: 'Too many tokens, please wait before trying again.' } }], split: 3 });
    const before = fake.calls.length;
    const stream = await openai.chat.completions.create({ model: 'meta/llama-two', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text, 'Hello from Bedrock.');
    assert.deepEqual(fake.calls.slice(before).map((c) => c.operation), ['converse-stream', 'converse-stream']);
    const detail = JSON.parse(String((await lastRecord()).detail)) as Json;
    assert.deepEqual((detail.attempts as Json[]).map((a) => [a.provider, a.error_code]), [['br-east', 'upstream_rate_limited'], ['br-key', null]]);
  });

  test('a modelStreamErrorException after content ends the client\'s stream with an error event', async () => {
    fake.reply({ events: [{ messageStart: { role: 'assistant' } }, { contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'Partial' } } }, { modelStreamErrorException: { message: 'The model stream failed.', originalStatusCode: 500 } }] });
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'amazon/nova-key', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.match(text, /"content":"Partial"/);
    const errorEvent = text.split('\n\n').map((l) => l.replace(/^data: /, '')).filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Json).find((e) => e.error);
    assert.equal(errorEvent?.error?.code, 'upstream_error');
    assert.match(String(errorEvent?.error?.message), /The model stream failed/);
    const record = await lastRecord();
    assert.equal(record.error_code, 'upstream_error');
  });

  test('a ValidationException is a terminal 400 upstream_bad_request with the upstream message; the record keeps the AWS request id', async () => {
    fake.reply({ status: 400, error: { type: 'ValidationException', message: 'The model returned the following errors: temperature: range: 0..1' } });
    const before = fake.calls.length;
    const err = await openai.chat.completions.create({ model: 'meta/llama-two', messages: [{ role: 'user', content: 'hi' }], temperature: 1.5 }).then(
      () => assert.fail('expected an error'),
      (e: Json) => e,
    );
    assert.equal(err.status, 400);
    assert.equal(err.code, 'upstream_bad_request');
    assert.match(String(err.message), /temperature: range: 0\.\.1/);
    assert.equal(fake.calls.length - before, 1);
    const record = await lastRecord();
    assert.equal(record.error_code, 'upstream_bad_request');
    assert.deepEqual(JSON.parse(String(record.detail)).provider_metadata, { aws_request_id: fake.calls.at(-1)!.requestId });
  });

  test('images and PDFs as base64 go as image / document bytes; an http image URL is refused with a 400 naming the param', async () => {
    const png = Buffer.from('fake-png-bytes').toString('base64');
    const pdf = Buffer.from('%PDF-1.4 fake').toString('base64');
    await openai.chat.completions.create({
      model: 'amazon/nova-key',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }, { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` } }] }],
    });
    assert.deepEqual(lastCall().body.messages[0].content, [
      { text: 'what is it' },
      { image: { format: 'png', source: { bytes: png } } },
      { document: { format: 'pdf', name: 'document 1', source: { bytes: pdf } } },
    ]);
    const err = await openai.chat.completions.create({ model: 'amazon/nova-key', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] }).then(
      () => assert.fail('expected an error'),
      (e: Json) => e,
    );
    assert.equal(err.status, 400);
    assert.equal(err.param, 'messages[0].content[1].image_url.url');
  });

  test('a wrong secret (aws_profile of a credentials file): the fake refuses the signature, the client gets an auth error, not a 500', async () => {
    const refusedBefore = fake.refusals.length;
    const err = await openai.chat.completions.create({ model: 'amazon/nova-wrong', messages: [{ role: 'user', content: 'hi' }] }).then(
      () => assert.fail('expected an error'),
      (e: Json) => e,
    );
    assert.deepEqual(fake.refusals.slice(refusedBefore), ['InvalidSignatureException']);
    assert.equal(err.code, 'upstream_auth_failed');
    assert.equal(err.status, 502);
    assert.match(String(err.message), /The request signature we calculated does not match/);
    assert.doesNotMatch(JSON.stringify(err.error ?? {}), /not-the-secret-of-this-key/);
  });
});

test('the fake\'s default answer is the Converse shape the SDK reads', () => {
  assert.equal(CONVERSE_TEXT.output.message.content[0]?.text, 'Hello from Bedrock.');
});
