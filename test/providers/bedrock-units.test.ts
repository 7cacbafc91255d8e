/**
 * Provider kind `bedrock`, unit by unit: the event-stream reader (every recorded ConverseStream
 * framed and cut at every byte decodes the same; oversized, corrupt and cut frames refused), the
 * stream transform over the recordings, the Converse request (cache points, reasoning echoed
 * back with its signature, stub tools for a history without tools, tool_choice none), usage,
 * stop reasons, exception mapping, URLs and regions, and the config checks.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, parseConfig, parseConfigWithWarnings } from '../../src/config/load.js';
import type { ChatRequest } from '../../src/core/chat-types.js';
import type { StreamPart } from '../../src/core/stream-part.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { createBedrockStreamTransform } from '../../src/providers/bedrock/bedrock-stream-transform.js';
import { bedrockExceptionName, inStreamBedrockError, parseBedrockErrorResponse } from '../../src/providers/bedrock/bedrock-error.js';
import { convertBedrockResponse } from '../../src/providers/bedrock/convert-bedrock-response.js';
import { convertBedrockUsage } from '../../src/providers/bedrock/convert-bedrock-usage.js';
import { bedrockModelUrl, bedrockRegion, convertToBedrockRequest } from '../../src/providers/bedrock/convert-to-bedrock-request.js';
import type { BedrockCredentials } from '../../src/providers/bedrock/bedrock-credentials.js';
import { mapBedrockFinishReason } from '../../src/providers/bedrock/map-bedrock-finish-reason.js';
import type { ProviderTarget } from '../../src/providers/types.js';
import { AwsEventStreamReader } from '../../src/upstream/aws-event-stream.js';
import { encodeEventFrame } from '../helpers/bedrock-fake.js';
import { fixturesAvailable, fixturesDir, loadChunks, loadJson } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const REC = 'amazon-bedrock';
const skipRecorded = fixturesAvailable() ? false : 'the recorded fixtures (../shared/fixtures/recorded) are absent';
const streams = () => readdirSync(path.join(fixturesDir, REC)).filter((f) => f.endsWith('.chunks.txt')).sort();
const wrapped = (file: string): Json[] => loadChunks(`${REC}/${file}`).map((l) => JSON.parse(l) as Json);

const target = (endpoint: Record<string, unknown> = {}, provider: Record<string, unknown> = {}) =>
  ({ endpoint: { upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', supported_parameters: ['tools', 'tool_choice', 'reasoning', 'temperature', 'top_k', 'stop'], ...endpoint }, provider: { id: 'br', headers: {}, ...provider } }) as unknown as ProviderTarget;
const noAuth: BedrockCredentials = { source: 'test', headers: () => Promise.resolve({ authorization: 'test' }), expired: () => undefined, secrets: () => [] };
const body = async (req: Partial<ChatRequest>, t = target()) => JSON.parse((await convertToBedrockRequest({ model: 'm', messages: [], ...req } as ChatRequest, t, false, noAuth)).body) as Json;

/** Decode `frames` written in pieces of `size` bytes. */
function decodeInPieces(bytes: Uint8Array, size: number): { event: string | undefined; data: string }[] {
  const reader = new AwsEventStreamReader(1 << 20, 'br');
  const out: { event: string | undefined; data: string }[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...reader.push(bytes.subarray(i, i + size)).map((e) => ({ ...e })));
  out.push(...reader.end());
  return out;
}

describe('AwsEventStreamReader', () => {
  test('every recorded ConverseStream, framed and cut at every byte (and in 1, 7, 64-byte pieces), decodes to the same events', { skip: skipRecorded }, () => {
    for (const file of streams()) {
      const events = wrapped(file);
      const bytes = Buffer.concat(events.map(encodeEventFrame));
      const whole = decodeInPieces(bytes, bytes.length);
      assert.deepEqual(whole.map((e) => e.event), events.map((e) => Object.keys(e)[0]), file);
      for (const [i, e] of whole.entries()) {
        const { p, ...payload } = JSON.parse(e.data) as Json;
        assert.equal(typeof p, 'string');
        assert.deepEqual(payload, Object.values(events[i]!)[0], `${file} event ${i}`);
      }
      for (const size of [1, 7, 64]) assert.deepEqual(decodeInPieces(bytes, size), whole, `${file} in ${size}-byte pieces`);
      // A cut at every byte position: two pieces.
      for (let cut = 1; cut < bytes.length; cut += 13) {
        const reader = new AwsEventStreamReader(1 << 20, 'br');
        const got = [...reader.push(bytes.subarray(0, cut)).map((e) => ({ ...e })), ...reader.push(bytes.subarray(cut)).map((e) => ({ ...e })), ...reader.end()];
        assert.deepEqual(got, whole, `${file} cut at ${cut}`);
      }
    }
  });

  test('an exception frame is read as its :exception-type with its payload', () => {
    const [e] = decodeInPieces(encodeEventFrame({ throttlingException: { message: 'slow down' } }), 3);
    assert.equal(e?.event, 'throttlingException');
    assert.equal((JSON.parse(e!.data) as Json).message, 'slow down');
  });

  test('a message over upstream_max_event_bytes, a corrupt CRC and a stream cut inside a message are refused as upstream_invalid_response', () => {
    const frame = encodeEventFrame({ contentBlockDelta: { contentBlockIndex: 0, delta: { text: 'x'.repeat(200) } } });
    assert.throws(() => new AwsEventStreamReader(100, 'br').push(frame.subarray(0, 4)), (err: GatewayError) => err.code === 'upstream_invalid_response' && /larger than 100 bytes/.test(err.message));
    const corrupt = Uint8Array.from(frame);
    corrupt[corrupt.length - 5] = corrupt[corrupt.length - 5]! ^ 0xff;
    assert.throws(() => new AwsEventStreamReader(1 << 20, 'br').push(corrupt), (err: GatewayError) => err.code === 'upstream_invalid_response' && /malformed/.test(err.message));
    const reader = new AwsEventStreamReader(1 << 20, 'br');
    assert.deepEqual(reader.push(frame.subarray(0, 20)), []);
    assert.throws(() => reader.end(), (err: GatewayError) => err.code === 'upstream_invalid_response' && /ended inside a message/.test(err.message));
  });
});

describe('bedrock stream transform over the recordings', () => {
  const run = (events: Json[]): StreamPart[] => {
    const t = createBedrockStreamTransform('br');
    const parts: StreamPart[] = [];
    for (const e of events) {
      const [type, payload] = Object.entries(e)[0] as [string, Json];
      parts.push(...t.push({ event: type, data: JSON.stringify({ ...payload, p: 'pad' }) }));
    }
    return [...parts, ...t.flush()];
  };

  test('text: the deltas in order; finish from messageStop, usage from the metadata event sent after it', { skip: skipRecorded }, () => {
    const parts = run(wrapped('amazon-bedrock-text.chunks.txt'));
    assert.equal(parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join(''), wrapped('amazon-bedrock-text.chunks.txt').map((e) => e.contentBlockDelta?.delta?.text ?? '').join(''));
    assert.deepEqual(parts.find((p) => p.type === 'finish'), { type: 'finish', finishReason: 'stop', nativeFinishReason: 'end_turn' });
  });

  test('text then a tool call without arguments: the text, then one call with "{}" at dense index 0 (contentBlockIndex 1); tool_calls; usage', { skip: skipRecorded }, () => {
    const parts = run(wrapped('amazon-bedrock-tool-no-args.chunks.txt'));
    assert.deepEqual(parts, [
      { type: 'text', text: "I'll update the issue list for you." },
      { type: 'tool-call-start', index: 0, id: 'tool-use-id', name: 'updateIssueList' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'finish', finishReason: 'tool_calls', nativeFinishReason: 'tool_use' },
      { type: 'usage', usage: { promptTokens: 100, completionTokens: 25, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' } },
    ]);
  });

  test('reasoning: text as reasoning parts, the signature delta joined into one reasoning-details part', { skip: skipRecorded }, () => {
    const events = wrapped('amazon-bedrock-reasoning.chunks.txt');
    const parts = run(events);
    const details = parts.filter((p) => p.type === 'reasoning-details') as Array<{ details: Json[] }>;
    assert.equal(details.length, 1);
    assert.equal(details[0]!.details[0]!.signature, events.map((e) => e.contentBlockDelta?.delta?.reasoningContent?.signature ?? '').join(''));
  });

  test('a stream without messageStop ends with an error part; an exception frame is an error part mapped by its type', () => {
    const t = createBedrockStreamTransform('br');
    t.push({ event: 'contentBlockDelta', data: JSON.stringify({ contentBlockIndex: 0, delta: { text: 'hi' } }) });
    assert.equal((t.flush()[0] as { error: GatewayError }).error.code, 'upstream_connection_failed');
    const x = createBedrockStreamTransform('br');
    const [part] = x.push({ event: 'serviceUnavailableException', data: JSON.stringify({ message: 'busy' }) });
    assert.equal((part as { error: GatewayError }).error.code, 'upstream_overloaded');
    assert.deepEqual(x.flush(), []);
  });
});

describe('bedrock Converse request', () => {
  test('cache_control marks become cachePoint blocks after the text (system and messages), the top-level one after the last message', async () => {
    const b = await body({
      cache_control: { type: 'ephemeral' },
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'long system', cache_control: { type: 'ephemeral', ttl: '1h' } }] },
        { role: 'user', content: [{ type: 'text', text: 'doc', cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'question' }] },
      ],
    });
    assert.deepEqual(b.system, [{ text: 'long system' }, { cachePoint: { type: 'default', ttl: '1h' } }]);
    assert.deepEqual(b.messages, [{ role: 'user', content: [{ text: 'doc' }, { cachePoint: { type: 'default' } }, { text: 'question' }, { cachePoint: { type: 'default' } }] }]);
  });

  test('reasoning of an earlier answer is echoed as reasoningContent with its signature, redacted content as redactedContent; other kinds\' details are dropped', async () => {
    const b = await body({
      messages: [
        { role: 'user', content: 'q' },
        {
          role: 'assistant',
          content: 'a',
          reasoning_details: [
            { type: 'reasoning.text', text: 'thinking', signature: 'sig-1', format: 'amazon-bedrock-converse-v1' },
            { type: 'reasoning.encrypted', data: 'UkVEQUNURUQ=', format: 'amazon-bedrock-converse-v1' },
            { type: 'reasoning.text', text: 'gemini', signature: 'g', format: 'google-gemini-v1' },
          ],
        },
        { role: 'user', content: 'more' },
      ],
    });
    assert.deepEqual(b.messages[1], { role: 'assistant', content: [{ reasoningContent: { reasoningText: { text: 'thinking', signature: 'sig-1' } } }, { reasoningContent: { redactedContent: 'UkVEQUNURUQ=' } }, { text: 'a' }] });
  });

  test('a history with tool calls but no tools in the request declares stub tools (Converse needs toolConfig); tool_choice none sends no toolConfig without such a history', async () => {
    const history = await body({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'found' },
      ],
    });
    assert.deepEqual(history.toolConfig.tools.map((t: Json) => t.toolSpec.name), ['lookup']);
    const none = await body({ messages: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: 'none' });
    assert.equal(none.toolConfig, undefined);
    const forced = await body({ messages: [{ role: 'user', content: 'q' }], tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'f' } } });
    assert.deepEqual(forced.toolConfig, { tools: [{ toolSpec: { name: 'f', inputSchema: { json: { type: 'object', properties: {} } } } }], toolChoice: { tool: { name: 'f' } } });
  });

  test('top_k goes to additionalModelRequestFields; reasoning on a non-Anthropic model is not sent (warned); unsupported fields are dropped', async () => {
    const call = await convertToBedrockRequest({ model: 'm', messages: [{ role: 'user', content: 'q' }], top_k: 5, reasoning: { effort: 'high' }, seed: 3, user: 'u1' } as ChatRequest, target({ upstream_model: 'meta.llama3-3-70b-instruct-v1:0' }), false, noAuth);
    const b = JSON.parse(call.body) as Json;
    assert.deepEqual(b.additionalModelRequestFields, { top_k: 5 });
    assert.match(call.warnings!.join('\n'), /reasoning not sent/);
    assert.deepEqual(call.dropped, ['seed', 'user']);
    assert.equal(call.streamFraming, undefined);
  });

  test('URLs: the model id percent-encoded whole; the endpoint region over the provider\'s; a base_url host\'s region read for signing', async () => {
    assert.equal(bedrockModelUrl(target({ bedrock: { region: 'eu-west-1' } }, { bedrock: { region: 'us-east-1' } }), 'converse-stream'), 'https://bedrock-runtime.eu-west-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream');
    assert.equal(bedrockModelUrl(target({ upstream_model: 'arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-x' }, { base_url: 'http://127.0.0.1:9/' }), 'converse'), 'http://127.0.0.1:9/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fglobal.anthropic.claude-x/converse');
    assert.equal(bedrockRegion(target({}, { base_url: 'https://vpce-1a2b.bedrock-runtime.ap-southeast-2.vpce.amazonaws.com' })), 'ap-southeast-2');
    assert.equal(bedrockRegion(target({}, { base_url: 'http://127.0.0.1:9' })), 'us-east-1');
    const call = await convertToBedrockRequest({ model: 'm', messages: [{ role: 'user', content: 'q' }] } as ChatRequest, target({}, { bedrock: { region: 'us-west-2' } }), true, noAuth);
    assert.equal(call.streamFraming, 'aws-eventstream');
    assert.match(call.url, /bedrock-runtime\.us-west-2\.amazonaws\.com\/model\/.*\/converse-stream$/);
  });
});

describe('bedrock answers, usage, stop reasons, errors', () => {
  test('the recorded reasoning answer: reasoning with its signature, the text, usage with cache counts', { skip: skipRecorded }, () => {
    const r = convertBedrockResponse('br', loadJson(`${REC}/amazon-bedrock-reasoning.json`));
    assert.match(String(r.reasoning), /There are 3 r's/);
    assert.equal(r.reasoningDetails?.[0]?.format, 'amazon-bedrock-converse-v1');
    assert.match(String(r.content), /\*\*3\*\*/);
    assert.deepEqual(r.usage, { promptTokens: 51, completionTokens: 78, cachedTokens: 0, cacheWriteTokens: 0, reasoningTokens: null, source: 'upstream' });
    assert.deepEqual(r.providerMetadata, { bedrock_latency_ms: 2202 });
  });

  test('usage: cache reads and writes are part of the prompt; unreported counts stay null', () => {
    assert.deepEqual(convertBedrockUsage({ inputTokens: 10, outputTokens: 4, cacheReadInputTokens: 100, cacheWriteInputTokens: 20 }), { promptTokens: 130, completionTokens: 4, cachedTokens: 100, cacheWriteTokens: 20, reasoningTokens: null, source: 'upstream' });
    assert.deepEqual(convertBedrockUsage({ inputTokens: 10, outputTokens: 4 }), { promptTokens: 10, completionTokens: 4, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' });
    assert.equal(convertBedrockUsage({}), null);
  });

  test('stop reasons', () => {
    assert.deepEqual(
      ['end_turn', 'tool_use', 'max_tokens', 'stop_sequence', 'guardrail_intervened', 'content_filtered', 'model_context_window_exceeded', 'malformed_tool_use', 'new_reason', null].map((r) => mapBedrockFinishReason(r)),
      ['stop', 'tool_calls', 'length', 'stop', 'content_filter', 'content_filter', 'length', 'stop', 'stop', 'stop'],
    );
  });

  test('exceptions: by x-amzn-ErrorType (else __type), retryable or terminal as the catalog says, the AWS request id kept', () => {
    const h = (type: string) => ({ 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-requestid': 'req-123' });
    const cases: Array<[string, number, string]> = [
      ['ThrottlingException', 429, 'upstream_rate_limited'],
      ['ModelNotReadyException', 429, 'upstream_rate_limited'],
      ['ServiceQuotaExceededException', 400, 'upstream_rate_limited'],
      ['ValidationException', 400, 'upstream_bad_request'],
      ['AccessDeniedException', 403, 'upstream_auth_failed'],
      ['UnrecognizedClientException', 403, 'upstream_auth_failed'],
      ['ModelTimeoutException', 408, 'upstream_timeout'],
      ['ModelErrorException', 424, 'upstream_error'],
      ['ServiceUnavailableException', 503, 'upstream_overloaded'],
      ['InternalServerException', 500, 'upstream_error'],
      ['ResourceNotFoundException', 404, 'upstream_error'],
    ];
    for (const [type, status, code] of cases) {
      const err = parseBedrockErrorResponse('br', status, h(type), JSON.stringify({ message: `${type} said` }));
      assert.equal(err.code, code, type);
      assert.equal(err.metadata?.upstream_code, type);
      assert.equal(err.metadata?.aws_request_id, 'req-123');
      assert.deepEqual(err.metadata?.provider_metadata, { aws_request_id: 'req-123' });
    }
    assert.equal(parseBedrockErrorResponse('br', 400, {}, JSON.stringify({ __type: 'com.amazon.coral.validate#ValidationException', message: 'Input is too long for requested model.' })).code, 'context_length_exceeded');
    assert.equal(bedrockExceptionName('aws.protocols#ThrottlingException'), 'ThrottlingException');
    const inStream = inStreamBedrockError('br', 'modelStreamErrorException', { message: 'boom', originalStatusCode: 500 });
    assert.deepEqual([inStream.code, inStream.metadata?.upstream_code, inStream.metadata?.upstream_original_status], ['upstream_error', 'ModelStreamErrorException', 500]);
  });
});

describe('bedrock config', () => {
  const config = (provider: Record<string, unknown>, endpoint: Record<string, unknown> = {}) => ({
    providers: [{ id: 'br', kind: 'bedrock', ...provider }],
    models: [{ id: 'a/m', context_length: 1000, endpoints: [{ provider: 'br', upstream_model: 'amazon.nova-pro-v1:0', ...endpoint }] }],
  });
  const issues = (raw: unknown): string => {
    try {
      parseConfig(raw, 'test');
    } catch (err) {
      if (err instanceof ConfigError) return err.issues.join('\n');
      throw err;
    }
    return '';
  };

  test('a region on the provider or the endpoint (or a base_url) is required; bad regions and unknown fields are refused', () => {
    assert.match(issues(config({})), /needs a region/);
    assert.equal(issues(config({}, { bedrock: { region: 'us-east-1' } })), '');
    assert.equal(issues(config({ base_url: 'http://127.0.0.1:9' })), '');
    const c = parseConfig(config({ bedrock: { region: 'eu-central-1', aws_profile: 'prod' } }), 'test');
    assert.deepEqual(c.providers[0]?.bedrock, { region: 'eu-central-1', aws_profile: 'prod' });
    assert.match(issues(config({ bedrock: { region: 'Frankfurt' } })), /providers\[0\]\.bedrock\.region: must be an AWS region/);
    assert.match(issues(config({ bedrock: { region: 'us-east-1', secret: 'x' } })), /providers\[0\]\.bedrock/);
    assert.match(issues(config({ bedrock: { region: 'us-east-1' } }, { embeddings: true })), /must be a Titan Text Embeddings .* or Cohere Embed/);
    assert.match(issues(config({ bedrock: { region: 'us-east-1' } }, { embeddings: true, upstream_model: 'amazon.titan-embed-text-v2:0' })), /set max_embedding_inputs: 1/);
    assert.equal(issues(config({ bedrock: { region: 'us-east-1' } }, { embeddings: true, upstream_model: 'amazon.titan-embed-text-v2:0', max_embedding_inputs: 1 })), '');
    assert.equal(issues(config({ bedrock: { region: 'us-east-1' } }, { embeddings: true, upstream_model: 'cohere.embed-multilingual-v3' })), '');
    assert.match(issues(config({ bedrock: { region: 'us-east-1' } }, { embeddings: true, upstream_model: 'cohere.embed-multilingual-v3', max_embedding_inputs: 200 })), /max_embedding_inputs/);
  });

  test('an api_key emptied by an unset variable: the warning says the provider signs with the default chain instead', () => {
    const { warnings } = parseConfigWithWarnings(config({ bedrock: { region: 'us-east-1' }, api_key: '${OP_TEST_UNSET_BEDROCK_KEY:-}' }), 'test', {});
    assert.deepEqual(warnings, [
      'providers[0].api_key: provider "br" has an empty api_key: OP_TEST_UNSET_BEDROCK_KEY is not set (the default after ":-" is empty), so its requests are signed with the AWS default credential chain instead of a Bedrock API key; set OP_TEST_UNSET_BEDROCK_KEY, or remove the provider',
    ]);
  });
});
