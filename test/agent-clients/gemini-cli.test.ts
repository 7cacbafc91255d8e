/**
 * The Gemini CLI (`@google/gemini-cli`, installed in test/agent-clients by `npm run
 * agents:install`, not a project dependency) against the gateway's Gemini API ingress:
 * `gemini -p` with `GOOGLE_GEMINI_BASE_URL` = the gateway and a gateway key in
 * `GEMINI_API_KEY`, HOME in a temporary folder whose `~/.gemini/settings.json` selects API-key
 * auth and turns usage statistics, telemetry and update checks off. Each run reads a file with
 * the CLI's built-in `read_file` tool and then answers, once through an `openai`-kind upstream
 * (translated), once through a `gemini`-kind upstream and once through Gemini on Vertex AI (the
 * fake Vertex of test/helpers/vertex-fake.ts), both native lanes: the CLI's body, thought
 * signatures included, goes through as sent. The CLI runs offline: every request it would make
 * beyond loopback goes to a closed proxy port and fails.
 *
 * Why `security.auth.selectedType: "gemini-api-key"`: with only `GOOGLE_GEMINI_BASE_URL` set,
 * Gemini CLI 0.61.0 picks its auth type `gateway` from the environment but its own
 * non-interactive check (`validateAuthMethod`) does not know that type and exits with
 * "Invalid auth method selected." (exit 41). API-key auth still honours the base URL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { testLogFile } from '../helpers/test-output.js';
import { startVertexFake, type VertexFake } from '../helpers/vertex-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const geminiBin = path.join(here, 'node_modules', '.bin', 'gemini');
const installed = existsSync(geminiBin);
if (!installed) process.stderr.write(`# SKIPPED: Gemini CLI tests: ${geminiBin} is absent; run \`npm run agents:install\` first\n`);

/** The settings the docs (docs/agent-clients.md, Gemini CLI) give, as tested. */
const GEMINI_CLI_SETTINGS = {
  security: { auth: { selectedType: 'gemini-api-key' } },
  privacy: { usageStatisticsEnabled: false },
  telemetry: { enabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
};

const chunk = (delta: Json, finish: string | null = null) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
const usage = (p: number, c: number) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } });
const gEvent = (parts: Json[], extra: Json = {}, usageMetadata?: Json) =>
  JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], ...(usageMetadata ? { usageMetadata } : {}), modelVersion: 'gemini-2.5-flash', responseId: 'up-resp' });

const DOT_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

interface Run { code: number | null; stdout: string; stderr: string }

/** Run `gemini --skip-trust -p <prompt> -m <model> [-o json]`; resolves with its exit code and output. Killed after 90 s. */
function geminiPrompt(home: string, cwd: string, gatewayOrigin: string, key: string, model: string, prompt: string, json = false): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(geminiBin, ['--skip-trust', '-m', model, '-p', prompt, ...(json ? ['--output-format', 'json'] : [])], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: home,
        GOOGLE_GEMINI_BASE_URL: gatewayOrigin,
        GEMINI_API_KEY: key,
        // Offline: anything but loopback goes to a port nothing listens on.
        HTTPS_PROXY: 'http://127.0.0.1:9',
        HTTP_PROXY: 'http://127.0.0.1:9',
        https_proxy: 'http://127.0.0.1:9',
        http_proxy: 'http://127.0.0.1:9',
        NO_PROXY: '127.0.0.1,localhost',
        no_proxy: '127.0.0.1,localhost',
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('Gemini CLI (gemini -p) through the Gemini API ingress', { skip: !installed && 'Gemini CLI not installed (npm run agents:install)' }, () => {
  let openai: Upstream;
  let gemini: Upstream;
  let vertex: VertexFake;
  let gw: TestGateway;
  let home: string;
  let work: string;
  let file: string;

  before(async () => {
    openai = await startUpstream();
    gemini = await startUpstream();
    vertex = await startVertexFake();
    gw = await startGateway({
      retention: 1,
      providers: [
        { id: 'oa', kind: 'openai', base_url: openai.url, api_key: 'sk-up' },
        { id: 'gem', kind: 'gemini', base_url: new URL(gemini.url).origin, api_key: 'g-upstream-key' },
        { id: 'vx', kind: 'vertex', base_url: vertex.origin, vertex: { project: 'proj-1', key_file: vertex.externalAccountFile() } },
      ],
      models: [
        { id: 'test/coder', context_length: 200000, endpoints: [{ provider: 'oa', upstream_model: 'coder-1', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'reasoning', 'temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'response_format'] }] },
        { id: 'google/gemini-2.5-flash', aliases: ['gemini-2.5-flash'], context_length: 1_000_000, endpoints: [{ provider: 'gem', upstream_model: 'gemini-2.5-flash', pricing: { prompt: 0.3, completion: 2.5 }, supported_parameters: ['tools', 'tool_choice', 'reasoning', 'temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'response_format'] }] },
        { id: 'test/vision', context_length: 200000, architecture: { input_modalities: ['text', 'image'] }, endpoints: [{ provider: 'oa', upstream_model: 'vision-1', supported_parameters: ['tools', 'tool_choice', 'temperature', 'top_p', 'top_k', 'max_tokens'] }] },
        { id: 'google/gemini-2.5-pro', aliases: ['gemini-2.5-pro'], context_length: 1_000_000, endpoints: [{ provider: 'vx', upstream_model: 'gemini-2.5-pro', pricing: { prompt: 1.25, completion: 10 }, supported_parameters: ['tools', 'tool_choice', 'reasoning', 'temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'response_format'] }] },
      ],
    });
    home = mkdtempSync(path.join(tmpdir(), 'op-gemini-home-'));
    work = mkdtempSync(path.join(tmpdir(), 'op-gemini-work-'));
    file = path.join(work, 'input.txt');
    writeFileSync(file, 'PINEAPPLE-7\n');
    // A 1×1 PNG, for read_file's inline-data answer.
    writeFileSync(path.join(work, 'dot.png'), Buffer.from(DOT_PNG, 'base64'));
    mkdirSync(path.join(home, '.gemini'));
    writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify(GEMINI_CLI_SETTINGS, null, 2));
  });
  after(async () => {
    await gw?.close();
    await openai?.close();
    await gemini?.close();
    await vertex?.close();
    if (home) rmSync(home, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('to an openai-kind upstream: read_file runs, its content goes up as the tool message, the answer is printed; both turns recorded', async () => {
    const key = await gw.createKey('gemini-cli-openai');
    openai.enqueue(
      { sse: [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_r1', type: 'function', function: { name: 'read_file', arguments: '' } }] }), chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ file_path: file }) } }] }), chunk({}, 'tool_calls'), usage(900, 20)] },
      { sse: [chunk({ role: 'assistant', content: 'The file says ' }), chunk({ content: 'PINEAPPLE-7.' }), chunk({}, 'stop'), usage(950, 8)] },
    );
    const run = await geminiPrompt(home, work, gw.origin, key.secret, 'test/coder', 'What does input.txt say?');
    assert.equal(run.code, 0, `gemini exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-3000)}`);
    assert.equal(run.stdout.trim(), 'The file says PINEAPPLE-7.');

    assert.equal(openai.requests.length, 2);
    const [first, second] = openai.requests.map((r) => r.json as Json) as [Json, Json];
    for (const r of openai.requests) assert.equal(r.path, '/v1/chat/completions');
    assert.equal(first.model, 'coder-1');
    assert.equal(first.stream, true);
    assert.equal(first.messages[0].role, 'system');
    assert.match(first.messages[0].content, /^You are Gemini CLI/);
    assert.equal(first.messages.at(-1).role, 'user');
    assert.ok(JSON.stringify(first.messages.at(-1).content).includes('What does input.txt say?'));
    const readFile = (first.tools as Json[]).find((t) => t.function.name === 'read_file');
    assert.deepEqual(readFile?.function.parameters.required, ['file_path']);
    // The second turn: the assistant's call with its id, then the tool's output under that id.
    const assistant = (second.messages as Json[]).find((m) => m.role === 'assistant');
    assert.deepEqual(assistant?.tool_calls, [{ id: 'call_r1', type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ file_path: file }) } }]);
    const tool = (second.messages as Json[]).find((m) => m.role === 'tool');
    assert.equal(tool?.tool_call_id, 'call_r1');
    assert.equal(tool?.content, JSON.stringify({ output: 'PINEAPPLE-7\n' }));
    assert.equal(second.messages.at(-1), tool);

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', key.id).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.streamed, r.finish_reason, r.prompt_tokens, r.completion_tokens, r.provider]), [
      ['gemini', 'success', 1, 'tool_calls', 900, 20, 'oa'],
      ['gemini', 'success', 1, 'stop', 950, 8, 'oa'],
    ]);
  });

  test('to a gemini-kind upstream (native): the CLI\'s body goes through, the thought signature of the call comes back unchanged next turn', async () => {
    const key = await gw.createKey('gemini-cli-native');
    const signature = 'c2lnbmVkLXJlYWQtZmlsZS0x';
    gemini.enqueue(
      { framing: 'gemini', sse: [gEvent([{ functionCall: { name: 'read_file', args: { file_path: file } }, thoughtSignature: signature }], { finishReason: 'STOP' }, { promptTokenCount: 800, candidatesTokenCount: 15, totalTokenCount: 815 })] },
      { framing: 'gemini', sse: [gEvent([{ text: 'It reads ' }]), gEvent([{ text: 'PINEAPPLE-7.' }], { finishReason: 'STOP' }, { promptTokenCount: 840, candidatesTokenCount: 6, totalTokenCount: 846 })] },
    );
    const run = await geminiPrompt(home, work, gw.origin, key.secret, 'gemini-2.5-flash', 'What does input.txt say?', true);
    assert.equal(run.code, 0, `gemini exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-3000)}`);
    const out = JSON.parse(run.stdout.slice(run.stdout.indexOf('{'))) as Json;
    assert.equal(out.response, 'It reads PINEAPPLE-7.');

    assert.equal(gemini.requests.length, 2);
    for (const r of gemini.requests) {
      assert.equal(r.path, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
      assert.equal(r.headers['x-goog-api-key'], 'g-upstream-key');
    }
    const [first, second] = gemini.requests.map((r) => r.json as Json) as [Json, Json];
    assert.match(first.systemInstruction.parts[0].text, /^You are a non-interactive CLI agent/); // the CLI's prompt for gemini-2.5 models
    // What the CLI sends for a gemini-2.5 model, as it sent it.
    assert.deepEqual(Object.keys(first).sort(), ['contents', 'generationConfig', 'systemInstruction', 'tools']);
    assert.deepEqual(first.generationConfig, { temperature: 1, topP: 0.95, topK: 64, thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 } });
    assert.ok((first.tools[0].functionDeclarations as Json[]).some((d) => d.name === 'read_file'));
    assert.ok(JSON.stringify(first.contents.at(-1)).includes('What does input.txt say?'));
    // Turn 2: the model's call, with its signature as the upstream sent it, then the function response.
    // (The CLI gives the call an id of its own, `read_file_<ms>_0`, and answers under it.)
    const model = (second.contents as Json[]).at(-2)!;
    const callId = String(model.parts?.[0]?.functionCall?.id);
    assert.match(callId, /^read_file_\d+_0$/);
    assert.deepEqual(model, { role: 'model', parts: [{ functionCall: { id: callId, name: 'read_file', args: { file_path: file } }, thoughtSignature: signature }] });
    const response = (second.contents as Json[]).at(-1)!;
    assert.equal(response.role, 'user');
    assert.equal(response.parts.length, 1);
    assert.equal(response.parts[0].functionResponse.id, callId);
    assert.equal(response.parts[0].functionResponse.name, 'read_file');
    assert.deepEqual(response.parts[0].functionResponse.response, { output: 'PINEAPPLE-7\n' });
    assert.deepEqual(second.systemInstruction, first.systemInstruction);

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', key.id).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.streamed, r.prompt_tokens, r.completion_tokens, r.provider, r.served_model]), [
      ['gemini', 'success', 1, 800, 15, 'gem', 'google/gemini-2.5-flash'],
      ['gemini', 'success', 1, 840, 6, 'gem', 'google/gemini-2.5-flash'],
    ]);
  });

  test('to Gemini on Vertex AI (native): the same round trip; the CLI\'s function ids are left out (Vertex refuses them), the signature kept', async () => {
    const key = await gw.createKey('gemini-cli-vertex');
    const signature = 'dmVydGV4LXJlYWQtZmlsZQ==';
    vertex.reply(
      { framing: 'gemini', sse: [gEvent([{ functionCall: { name: 'read_file', args: { file_path: file } }, thoughtSignature: signature }], { finishReason: 'STOP' }, { promptTokenCount: 700, candidatesTokenCount: 12, totalTokenCount: 712 })] },
      { framing: 'gemini', sse: [gEvent([{ text: 'Vertex read PINEAPPLE-7.' }], { finishReason: 'STOP' }, { promptTokenCount: 730, candidatesTokenCount: 7, totalTokenCount: 737 })] },
    );
    const run = await geminiPrompt(home, work, gw.origin, key.secret, 'gemini-2.5-pro', 'What does input.txt say?');
    assert.equal(run.code, 0, `gemini exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-3000)}`);
    assert.equal(run.stdout.trim(), 'Vertex read PINEAPPLE-7.');

    assert.equal(vertex.calls.length, 2);
    for (const c of vertex.calls) {
      assert.equal(c.path, '/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-pro:streamGenerateContent');
      assert.equal(c.query.get('alt'), 'sse');
      assert.match(String(c.headers.authorization), /^Bearer ya29\.fake-\d+$/);
    }
    assert.deepEqual(vertex.calls[0]!.body.generationConfig, { temperature: 1, topP: 0.95, topK: 64, thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 } });
    const second = vertex.calls[1]!.body;
    assert.deepEqual(second.contents.at(-2), { role: 'model', parts: [{ functionCall: { name: 'read_file', args: { file_path: file } }, thoughtSignature: signature }] });
    assert.deepEqual(second.contents.at(-1), { role: 'user', parts: [{ functionResponse: { name: 'read_file', response: { output: 'PINEAPPLE-7\n' } } }] });

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', key.id).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.prompt_tokens, r.completion_tokens, r.provider]), [
      ['gemini', 'success', 700, 12, 'vx'],
      ['gemini', 'success', 730, 7, 'vx'],
    ]);
    assert.deepEqual(JSON.parse(rows[1]!.detail).warnings, ['functionCall/functionResponse id left out of 2 parts: Vertex AI does not accept it (calls and responses pair by name and order)']);
  });

  test('read_file on an image (translated): the CLI counts its tokens with :countTokens, the image goes up as an image part after the tool message', async () => {
    const key = await gw.createKey('gemini-cli-image');
    const image = path.join(work, 'dot.png');
    const logFile = testLogFile('gateway');
    const logStart = readFileSync(logFile, 'utf8').length;
    openai.enqueue(
      { sse: [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_img', type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ file_path: image }) } }] }), chunk({}, 'tool_calls'), usage(500, 9)] },
      { sse: [chunk({ role: 'assistant', content: 'A single dot.' }), chunk({}, 'stop'), usage(600, 4)] },
    );
    const before = openai.requests.length;
    const run = await geminiPrompt(home, work, gw.origin, key.secret, 'test/vision', 'What is in dot.png?');
    assert.equal(run.code, 0, `gemini exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-3000)}`);
    assert.equal(run.stdout.trim(), 'A single dot.');
    assert.equal(openai.requests.length, before + 2);
    const second = openai.requests.at(-1)!.json as Json;
    assert.deepEqual(second.messages.slice(-3), [
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_img', type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ file_path: image }) } }] },
      { role: 'tool', tool_call_id: 'call_img', content: JSON.stringify({ output: 'Binary content provided (1 item(s)).' }) },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${DOT_PNG}` } }] },
    ]);
    // The request with inline data was counted first (the gateway's estimate; nothing upstream, nothing recorded).
    const urls = readFileSync(logFile, 'utf8').slice(logStart).split('\n').filter((l) => l.includes('"msg":"request"')).map((l) => { const j = JSON.parse(l) as Json; return `${j.status as number} ${j.url as string}`; });
    assert.deepEqual(urls, [
      '200 /v1beta/models/test/vision:streamGenerateContent?alt=sse',
      '200 /v1beta/models/test/vision:countTokens',
      '200 /v1beta/models/test/vision:streamGenerateContent?alt=sse',
    ]);
    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', key.id).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.finish_reason, r.prompt_tokens, r.completion_tokens]), [['tool_calls', 500, 9], ['stop', 600, 4]]);
  });
});
