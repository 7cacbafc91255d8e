/**
 * The Claude Code CLI (`claude -p`, offline, ANTHROPIC_BASE_URL at the gateway) on /v1/messages
 * through the gateway's Messages pass-through lane to Claude on the two clouds, each faked by the
 * provider tests' fakes with a scripted conversation (the fakes' `script` hook):
 *
 * - kind `bedrock` (test/helpers/bedrock-fake.ts: SigV4 recomputed with the test credentials the
 *   gateway takes from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY): InvokeModelWithResponseStream,
 *   the Anthropic events sent as event-stream `chunk` frames (base64 of each event's JSON) cut at
 *   odd bytes; the body carries `anthropic_version: bedrock-2023-05-31`, no `model` or `stream`
 *   (the model id is in the path);
 * - kind `vertex`, publisher `anthropic` (test/helpers/vertex-fake.ts: the bearer must be one its
 *   metadata server issued, ADC pointed at it through GCE_METADATA_HOST): `:streamRawPredict`
 *   answering Anthropic SSE; the body carries `anthropic_version: vertex-2023-10-16`, no `model`.
 *
 * The script, per cloud: a request offering the Read tool and holding no tool result is answered
 * with a THINKING block (thinking_delta, then signature_delta) and a Read call on a file; the
 * next one, carrying the tool result, with a text quoting it. The test asserts the second turn
 * sent upstream carries the first turn's thinking block with its signature unchanged, the CLI's
 * final answer holds the file's secret word, and the records name the cloud endpoint with usage.
 * Skips, saying why, when the CLI is not installed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBedrockFake, type BedrockFake } from '../helpers/bedrock-fake.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startVertexFake, type VertexFake } from '../helpers/vertex-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = path.join(here, 'node_modules', '.bin', 'claude');
const skip = existsSync(CLAUDE) ? false : `Claude Code CLI not installed (${path.relative(process.cwd(), CLAUDE)} missing): run npm ci --prefix test/agent-clients`;
if (skip) console.warn(`\n*** SKIPPED: ${skip} ***\n`);

const SECRET_WORD = 'mangosteen-4821';
const THOUGHT = 'The user wants the file read; I will call the Read tool on it.';
/** A made-up signature with every base64 character class, so a re-encoding would show. */
const SIGNATURE = 'EqoBCkYIBxABGAIqQCloud+Signature/Of+Turn/One0123456789abcdefXYZ+/xyz==';
const AKID = 'AKIDTESTCLAUDECODE01';
const AWS_SECRET = 'test-secret-key-for-claude-code-through-bedrock';
const BEDROCK_MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const VERTEX_MODEL = 'claude-sonnet-4-5@20250929';
const USAGE = { input: 120, output: 20 };

/** The text of every tool_result block of a request's last user message. */
function toolResults(body: Json): string[] {
  const last = (body.messages as Json[] | undefined)?.at(-1);
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return [];
  return (last.content as Json[]).filter((b) => b.type === 'tool_result').map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}

const offersRead = (body: Json): boolean => Array.isArray(body.tools) && (body.tools as Json[]).some((t) => t.name === 'Read');

/** The scripted turn for a request: [thinking, Read call] first, the answer quoting the tool result next, `ok` for background calls. */
function scriptedTurn(body: Json, file: string): { blocks: Json[]; stop: string } {
  const results = toolResults(body);
  if (results.length > 0) return { blocks: [{ type: 'text', text: `The file says: ${results.join(' ')}` }], stop: 'end_turn' };
  if (offersRead(body)) {
    return {
      blocks: [{ type: 'thinking', thinking: THOUGHT, signature: SIGNATURE }, { type: 'tool_use', id: 'toolu_01CloudRead', name: 'Read', input: { file_path: file } }],
      stop: 'tool_use',
    };
  }
  return { blocks: [{ type: 'text', text: 'ok' }], stop: 'end_turn' };
}

/** The Anthropic stream events of one message made of `blocks` (thinking with its signature_delta, text, tool_use). */
function messageEvents(model: string, blocks: Json[], stop: string, extraStop: Json = {}): Json[] {
  const events: Json[] = [{
    type: 'message_start',
    message: { id: `msg_cloud_${Date.now()}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: USAGE.input, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } },
  }];
  blocks.forEach((b, index) => {
    if (b.type === 'thinking') {
      events.push(
        { type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } },
        { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: b.thinking } },
        { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } },
      );
    } else if (b.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } }, { type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
    } else {
      events.push(
        { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } },
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } },
      );
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: USAGE.output } }, { type: 'message_stop', ...extraStop });
  return events;
}

/** The non-streamed message of the same turn. */
function message(model: string, blocks: Json[], stop: string): Json {
  return { id: 'msg_cloud_plain', type: 'message', role: 'assistant', model, content: blocks, stop_reason: stop, stop_sequence: null, usage: { input_tokens: USAGE.input, output_tokens: USAGE.output } };
}

function run(cmd: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

/** A scratch folder with `project/secret.txt` holding the secret word. */
function workspace(prefix: string): { work: string; file: string } {
  const work = mkdtempSync(path.join(tmpdir(), prefix));
  const file = path.join(work, 'project', 'secret.txt');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${SECRET_WORD}\n`);
  return { work, file };
}

/** `claude -p` asked to read the file, with only the gateway's origin and key (no cloud variables: the gateway holds the cloud credentials). */
async function runClaude(gw: TestGateway, work: string, file: string): Promise<Json> {
  const { secret } = await gw.createKey('claude-code-cloud');
  const home = path.join(work, 'home');
  mkdirSync(home, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), TMPDIR: tmpdir(),
    ANTHROPIC_BASE_URL: gw.origin, ANTHROPIC_API_KEY: secret, ANTHROPIC_MODEL: 'claude-sonnet-4-5', ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
    ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5', ANTHROPIC_DEFAULT_SONNET_MODEL: 'claude-sonnet-4-5', ANTHROPIC_DEFAULT_OPUS_MODEL: 'claude-sonnet-4-5',
    MAX_THINKING_TOKENS: '1024',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CI: '1',
  };
  const out = await run(CLAUDE, ['-p', 'Read the file secret.txt and tell me what it says.', '--output-format', 'json', '--allowedTools', 'Read', '--max-turns', '4'], {
    cwd: path.dirname(file), env, timeoutMs: 120_000,
  });
  assert.equal(out.code, 0, `claude exited with ${out.code}\nstdout: ${out.stdout.slice(0, 2000)}\nstderr: ${out.stderr.slice(0, 2000)}`);
  const result = JSON.parse(out.stdout) as Json;
  assert.equal(result.is_error, false, out.stdout);
  assert.match(String(result.result), new RegExp(`The file says: .*${SECRET_WORD}`));
  return result;
}

/** The second turn (the request carrying the tool result) holds the first turn's thinking block, signature unchanged, before its tool_use. */
function assertThinkingPassedBack(body: Json): void {
  const assistant = (body.messages as Json[]).at(-2)!;
  assert.equal(assistant.role, 'assistant');
  const blocks = assistant.content as Json[];
  assert.deepEqual(blocks.map((b) => b.type), ['thinking', 'tool_use'], JSON.stringify(blocks));
  assert.deepEqual(blocks[0], { type: 'thinking', thinking: THOUGHT, signature: SIGNATURE });
  assert.equal(blocks[1]!.id, 'toolu_01CloudRead');
  // Claude Code asked for thinking (MAX_THINKING_TOKENS) and the gateway passed the parameter through.
  assert.deepEqual([body.thinking?.type, body.thinking?.budget_tokens], ['enabled', 1024]);
}

/** The records of the CLI's Messages requests, in order; the answer record quotes the tool result and names the endpoint, with usage and cost. */
async function assertRecords(gw: TestGateway, provider: string, upstreamModel: string, upstreamCalls: number, sessionId: string): Promise<Json> {
  await gw.flush();
  const rows = (await gw.store.db.selectFrom('generations').selectAll().where('api', '=', 'messages').orderBy('created_at').execute()) as Json[];
  assert.equal(rows.length, upstreamCalls);
  const toolTurn = rows.findIndex((r) => r.native_finish_reason === 'tool_use' && r.finish_reason === 'tool_calls');
  assert.ok(toolTurn >= 0, 'a record of the tool_use turn');
  assert.equal(rows[toolTurn]!.provider, provider);
  const answer = rows.slice(toolTurn + 1).find((r) => String(r.content).includes(SECRET_WORD));
  assert.ok(answer, 'a later record whose retained request holds the tool result');
  assert.deepEqual(
    [answer.status, answer.served_model, answer.provider, answer.upstream_model, answer.prompt_tokens, answer.completion_tokens, answer.native_finish_reason],
    ['success', 'anthropic/claude-cloud', provider, upstreamModel, USAGE.input, USAGE.output, 'end_turn'],
  );
  assert.deepEqual([answer.endpoint, answer.usage_source], [`${provider}/${upstreamModel}`, 'upstream']);
  // 120 × $3/M + 20 × $15/M = $0.00066 = 660_000_000 pico-dollars
  assert.equal(Number(answer.cost_pico), 660_000_000);
  assert.deepEqual([...new Set(rows.map((r) => r.session))], [sessionId]);
  return answer;
}

const model = (provider: string, upstreamModel: string): Json => ({
  id: 'anthropic/claude-cloud', name: 'Claude on a cloud', context_length: 200000, aliases: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
  endpoints: [{ provider, upstream_model: upstreamModel, pricing: { prompt: 3, completion: 15 }, supported_parameters: ['max_tokens', 'temperature', 'tools', 'tool_choice', 'reasoning'] }],
});

describe('Claude Code CLI through the gateway to Claude on Bedrock (InvokeModelWithResponseStream)', { skip }, () => {
  let gw: TestGateway;
  let fake: BedrockFake;
  let work: string;
  let file: string;

  before(async () => {
    ({ work, file } = workspace('op-claude-code-bedrock-'));
    fake = await startBedrockFake();
    fake.credentials.set(AKID, { secretAccessKey: AWS_SECRET });
    fake.script = (call) => {
      const { blocks, stop } = scriptedTurn(call.body, file);
      if (call.operation === 'invoke') return { json: message('claude-sonnet-4-5-20250929', blocks, stop) };
      const metrics = { 'amazon-bedrock-invocationMetrics': { inputTokenCount: USAGE.input, outputTokenCount: USAGE.output, invocationLatency: 800, firstByteLatency: 200 } };
      return { events: messageEvents('claude-sonnet-4-5-20250929', blocks, stop, metrics), split: 13 };
    };
    // The default AWS chain of the gateway: the environment's test keys, no files, no IMDS.
    const aws = mkdtempSync(path.join(tmpdir(), 'op-aws-'));
    process.env.AWS_SHARED_CREDENTIALS_FILE = path.join(aws, 'credentials');
    process.env.AWS_CONFIG_FILE = path.join(aws, 'config');
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    delete process.env.AWS_PROFILE;
    delete process.env.AWS_BEARER_TOKEN_BEDROCK;
    process.env.AWS_ACCESS_KEY_ID = AKID;
    process.env.AWS_SECRET_ACCESS_KEY = AWS_SECRET;
    gw = await startGateway({
      retention: 7,
      providers: [{ id: 'br-claude', kind: 'bedrock', base_url: fake.origin, bedrock: { region: 'us-east-1' } }],
      models: [model('br-claude', BEDROCK_MODEL)],
    });
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('claude -p reads the file through Bedrock; the thinking signature comes back intact in turn two; Bedrock body; records name br-claude', async () => {
    const result = await runClaude(gw, work, file);

    const invokes = fake.calls.filter((c) => c.operation === 'invoke' || c.operation === 'invoke-with-response-stream');
    const main = invokes.filter((c) => offersRead(c.body));
    assert.ok(main.length >= 2, `expected two turns with tools, got ${main.length}: ${invokes.map((c) => c.operation).join(', ')}`);
    for (const c of main) {
      assert.deepEqual([c.operation, c.modelId, c.principal, c.region], ['invoke-with-response-stream', BEDROCK_MODEL, AKID, 'us-east-1']);
      assert.equal(c.body.anthropic_version, 'bedrock-2023-05-31');
      assert.equal('model' in c.body, false, 'no model in the body');
      assert.equal('stream' in c.body, false, 'no stream in the body');
    }
    assert.equal(fake.refusals.length, 0, `signatures refused: ${fake.refusals.join(', ')}`);
    // Claude Code's betas reach Bedrock in the body (Bedrock takes them there, not as a header).
    assert.ok((main[0]!.body.anthropic_beta as string[]).some((b) => /^claude-code-/.test(b)), JSON.stringify(main[0]!.body.anthropic_beta));
    const second = main.find((c) => toolResults(c.body).some((t) => t.includes(SECRET_WORD)));
    assert.ok(second, 'a turn carrying the tool result');
    assertThinkingPassedBack(second.body);

    const answer = await assertRecords(gw, 'br-claude', BEDROCK_MODEL, invokes.length, String(result.session_id));
    // The record keeps the AWS request id of the call that answered.
    assert.equal((JSON.parse(String(answer.detail)) as Json).provider_metadata?.aws_request_id, second.requestId);
  });
});

describe('Claude Code CLI through the gateway to Claude on Vertex AI (:streamRawPredict)', { skip }, () => {
  let gw: TestGateway;
  let fake: VertexFake;
  let work: string;
  let file: string;

  before(async () => {
    ({ work, file } = workspace('op-claude-code-vertex-'));
    fake = await startVertexFake();
    fake.script = (call) => {
      if (call.publisher !== 'anthropic' || call.model === 'count-tokens') return undefined;
      const { blocks, stop } = scriptedTurn(call.body, file);
      if (call.method === 'rawPredict') return { json: message('claude-sonnet-4-5-20250929', blocks, stop) };
      return { sse: messageEvents('claude-sonnet-4-5-20250929', blocks, stop).map((e) => JSON.stringify(e)), framing: 'anthropic' };
    };
    // ADC of this process: no env file, no gcloud file, the metadata server at the fake.
    delete process.env.GOOGLE_APPLICATION_CREDENTIALS;
    process.env.CLOUDSDK_CONFIG = mkdtempSync(path.join(tmpdir(), 'op-gcloud-'));
    process.env.GCE_METADATA_HOST = fake.hostPort;
    process.env.METADATA_SERVER_DETECTION = 'assume-present';
    gw = await startGateway({
      retention: 7,
      providers: [{ id: 'vx-claude', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', location: 'us-east5', publisher: 'anthropic' } }],
      models: [model('vx-claude', VERTEX_MODEL)],
    });
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('claude -p reads the file through Vertex; the thinking signature comes back intact in turn two; Vertex body; records name vx-claude', async () => {
    const result = await runClaude(gw, work, file);

    const predicts = fake.calls.filter((c) => c.publisher === 'anthropic' && c.model !== 'count-tokens');
    const main = predicts.filter((c) => offersRead(c.body));
    assert.ok(main.length >= 2, `expected two turns with tools, got ${main.length}: ${predicts.map((c) => c.method).join(', ')}`);
    const issued = new Set(fake.issued.filter((t) => t.source === 'metadata').map((t) => t.token));
    for (const c of main) {
      assert.deepEqual([c.method, c.project, c.location, c.model], ['streamRawPredict', 'proj-1', 'us-east5', VERTEX_MODEL]);
      assert.equal(c.body.anthropic_version, 'vertex-2023-10-16');
      assert.equal('model' in c.body, false, 'no model in the body');
      assert.equal(c.body.stream, true);
      assert.ok(issued.has(String(c.headers.authorization).replace(/^Bearer /, '')), 'the bearer is a token of the fake metadata server');
    }
    // Claude Code's betas reach Vertex in the header.
    assert.match(String(main[0]!.headers['anthropic-beta'] ?? ''), /claude-code-/);
    const second = main.find((c) => toolResults(c.body).some((t) => t.includes(SECRET_WORD)));
    assert.ok(second, 'a turn carrying the tool result');
    assertThinkingPassedBack(second.body);

    await assertRecords(gw, 'vx-claude', VERTEX_MODEL, predicts.length, String(result.session_id));
  });
});
