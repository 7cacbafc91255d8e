/**
 * The Codex CLI (`@openai/codex`, installed in test/agent-clients by `npm run agents:install`,
 * not a project dependency) against the gateway over the Responses API: `codex exec` with a
 * model provider whose base_url is the gateway (`wire_api = "responses"`, the key in an
 * environment variable), CODEX_HOME in a temporary folder, and a scripted `openai`-kind
 * upstream that makes it run one shell command and then answer. Codex runs offline: every
 * request it would make beyond loopback goes to a closed proxy port and fails.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const codexBin = path.join(here, 'node_modules', '.bin', 'codex');
const installed = existsSync(codexBin);
if (!installed) process.stderr.write(`# SKIPPED: Codex CLI tests: ${codexBin} is absent; run \`npm run agents:install\` first\n`);

const chunk = (delta: Json, finish: string | null = null) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta, finish_reason: finish }] });
const usage = (p: number, c: number) => JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } });

/** Run `codex exec --json <prompt>`; resolves with its exit code and output. Killed after 90 s. */
function codexExec(home: string, cwd: string, key: string, prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(codexBin, ['exec', '--skip-git-repo-check', '--json', prompt], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH,
        HOME: home,
        CODEX_HOME: home,
        OPINFERENCE_API_KEY: key,
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

describe('Codex CLI (codex exec) through /v1/responses', { skip: !installed && 'Codex CLI not installed (npm run agents:install)' }, () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let home: string;
  let work: string;

  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [{ id: 'up', kind: 'openai', base_url: upstream.url, api_key: 'sk-up' }],
      models: [{ id: 'test/coder', context_length: 200000, endpoints: [{ provider: 'up', upstream_model: 'coder-1', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'temperature', 'max_tokens', 'max_completion_tokens'] }] }],
    });
    home = mkdtempSync(path.join(tmpdir(), 'op-codex-home-'));
    work = mkdtempSync(path.join(tmpdir(), 'op-codex-work-'));
    writeFileSync(path.join(work, 'input.txt'), 'PINEAPPLE-7\n');
    writeFileSync(
      path.join(home, 'config.toml'),
      [
        'model = "test/coder"',
        'model_provider = "opinference"',
        '[model_providers.opinference]',
        'name = "opinference"',
        `base_url = "${gw.baseURL}"`,
        'env_key = "OPINFERENCE_API_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    if (home) rmSync(home, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('runs one shell command the model asks for, then prints the answer; both turns recorded', async () => {
    const key = await gw.createKey('codex');
    upstream.enqueue(
      { sse: [chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_c1', type: 'function', function: { name: 'exec_command', arguments: '' } }] }), chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ cmd: 'cat input.txt' }) } }] }), chunk({}, 'tool_calls'), usage(900, 20)] },
      { sse: [chunk({ role: 'assistant', content: 'The file says ' }), chunk({ content: 'PINEAPPLE-7.' }), chunk({}, 'stop'), usage(950, 8)] },
    );
    const run = await codexExec(home, work, key.secret, 'What does input.txt say?');
    const events = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Json);
    assert.equal(run.code, 0, `codex exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-2000)}`);

    const command = events.find((e) => e.type === 'item.completed' && e.item.type === 'command_execution');
    assert.ok(command, run.stdout);
    assert.match(command.item.command, /cat input\.txt/);
    assert.equal(command.item.aggregated_output, 'PINEAPPLE-7\n');
    assert.equal(command.item.exit_code, 0);
    const answer = events.filter((e) => e.type === 'item.completed' && e.item.type === 'agent_message').at(-1);
    assert.equal(answer?.item.text, 'The file says PINEAPPLE-7.');
    const done = events.find((e) => e.type === 'turn.completed');
    assert.equal(done?.usage.input_tokens, 1850);
    assert.equal(done?.usage.output_tokens, 28);

    // The upstream saw the command's output as the tool result of the second turn.
    assert.equal(upstream.requests.length, 2);
    const second = upstream.requests[1]!.json as Json;
    const toolMessage = (second.messages as Json[]).find((m) => m.role === 'tool');
    assert.equal(toolMessage?.tool_call_id, 'call_c1');
    assert.match(String(toolMessage?.content), /PINEAPPLE-7/);

    await gw.flush();
    const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', key.id).orderBy('created_at').execute();
    assert.deepEqual(rows.map((r) => [r.api, r.status, r.streamed, r.finish_reason, r.prompt_tokens, r.completion_tokens]), [
      ['responses', 'success', 1, 'tool_calls', 900, 20],
      ['responses', 'success', 1, 'stop', 950, 8],
    ]);
    assert.ok(JSON.parse(rows[0]!.detail).warnings.some((w: string) => w.startsWith('Responses fields not translated:')));
    // Codex's session-id header (its thread id) is both records' session.
    const thread = events.find((e) => e.type === 'thread.started')?.thread_id;
    assert.match(String(thread), /^[0-9a-f-]{36}$/);
    assert.deepEqual(rows.map((r) => r.session), [thread, thread]);
  });
});
