/**
 * The Claude Code CLI (`@anthropic-ai/claude-code`, installed in this folder by
 * `npm ci --prefix test/agent-clients`) completes a task that needs a tool, with
 * ANTHROPIC_BASE_URL set to the gateway and a gateway key as ANTHROPIC_API_KEY, against a
 * scripted `anthropic` upstream on port 0: the upstream asks for the Read tool on a file and then
 * answers with what the tool result contained, so the final answer proves the round trip ran.
 * The generation records must show it (a tool_use turn, then the answer with the tool result).
 * Skips, saying why, when the CLI is not installed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = path.join(here, 'node_modules', '.bin', 'claude');
const skip = existsSync(CLAUDE) ? false : `Claude Code CLI not installed (${path.relative(process.cwd(), CLAUDE)} missing): run npm ci --prefix test/agent-clients`;
if (skip) console.warn(`\n*** SKIPPED: ${skip} ***\n`);

const SECRET_WORD = 'pineapple-7319';

/** Anthropic SSE for one message made of the given blocks (text or tool_use). */
function messageEvents(model: string, blocks: Json[], stopReason: string): string {
  const ev = (data: Json) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = ev({ type: 'message_start', message: { id: `msg_${Date.now()}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 120, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } } });
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      out += ev({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      out += ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: b.text } });
    } else {
      out += ev({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      out += ev({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
    }
    out += ev({ type: 'content_block_stop', index });
  });
  out += ev({ type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 20 } });
  return out + ev({ type: 'message_stop' });
}

/** The text of every tool_result block of a request's last user message. */
function toolResults(body: Json): string[] {
  const last = (body.messages as Json[]).at(-1);
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return [];
  return (last.content as Json[]).filter((b) => b.type === 'tool_result').map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)));
}

/**
 * A scripted Anthropic upstream: a request offering the Read tool and holding no tool result is
 * answered with a Read call on `file`; one carrying a tool result with the answer quoting it;
 * anything else (background calls) with a short text.
 */
async function startScriptedAnthropic(file: string) {
  const requests: Json[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = (raw ? JSON.parse(raw) : {}) as Json;
      requests.push({ path: req.url, headers: req.headers, body });
      if (req.url?.includes('count_tokens')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 100 }));
        return;
      }
      const offersRead = Array.isArray(body.tools) && (body.tools as Json[]).some((t) => t.name === 'Read');
      const results = toolResults(body);
      let blocks: Json[];
      let stop = 'end_turn';
      if (results.length > 0) blocks = [{ type: 'text', text: `The file says: ${results.join(' ')}` }];
      else if (offersRead) {
        blocks = [{ type: 'tool_use', id: 'toolu_01ReadSecret', name: 'Read', input: { file_path: file } }];
        stop = 'tool_use';
      } else blocks = [{ type: 'text', text: 'ok' }];
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(messageEvents(body.model, blocks, stop));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
          id: 'msg_plain', type: 'message', role: 'assistant', model: body.model, stop_reason: stop, stop_sequence: null,
          content: blocks.map((b) => (b.type === 'text' ? b : { ...b })), usage: { input_tokens: 120, output_tokens: 20 },
        }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function run(cmd: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

describe('Claude Code CLI through the gateway', { skip }, () => {
  let gw: TestGateway;
  let upstream: Awaited<ReturnType<typeof startScriptedAnthropic>>;
  let work: string;
  let file: string;

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'op-claude-code-'));
    file = path.join(work, 'project', 'secret.txt');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, `${SECRET_WORD}\n`);
    upstream = await startScriptedAnthropic(file);
    gw = await startGateway({
      retention: 7,
      providers: [{ id: 'anth', kind: 'anthropic', base_url: upstream.url, api_key: 'sk-ant-upstream' }],
      models: [{
        id: 'anthropic/claude-test', name: 'Claude test', context_length: 200000, aliases: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
        endpoints: [{ provider: 'anth', upstream_model: 'claude-test-upstream', pricing: { prompt: 3, completion: 15 }, supported_parameters: ['max_tokens', 'temperature', 'tools', 'tool_choice', 'reasoning'] }],
      }],
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('claude -p reads a file with its Read tool and answers with its content; the records show the round trip', async () => {
    const { secret } = await gw.createKey('claude-code');
    const home = path.join(work, 'home');
    mkdirSync(home, { recursive: true });
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), TMPDIR: tmpdir(),
      ANTHROPIC_BASE_URL: gw.origin, ANTHROPIC_API_KEY: secret, ANTHROPIC_MODEL: 'claude-sonnet-4-5', ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5', ANTHROPIC_DEFAULT_SONNET_MODEL: 'claude-sonnet-4-5', ANTHROPIC_DEFAULT_OPUS_MODEL: 'claude-sonnet-4-5',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CI: '1',
    };
    const out = await run(CLAUDE, ['-p', 'Read the file secret.txt and tell me what it says.', '--output-format', 'json', '--allowedTools', 'Read', '--max-turns', '4'], {
      cwd: path.dirname(file), env, timeoutMs: 120_000,
    });
    assert.equal(out.code, 0, `claude exited with ${out.code}\nstdout: ${out.stdout.slice(0, 2000)}\nstderr: ${out.stderr.slice(0, 2000)}`);
    const result = JSON.parse(out.stdout) as Json;
    assert.equal(result.is_error, false, out.stdout);
    assert.match(String(result.result), new RegExp(`The file says: .*${SECRET_WORD}`));

    // Upstream saw the tool round trip, with Claude Code's headers forwarded.
    const main = upstream.requests.filter((r) => Array.isArray(r.body.tools) && r.body.tools.some((t: Json) => t.name === 'Read'));
    assert.ok(main.length >= 2, `expected two turns with tools, got ${main.length}`);
    assert.equal(main[0]!.body.model, 'claude-test-upstream');
    assert.match(String(main[0]!.headers['anthropic-beta'] ?? ''), /claude-code-/);
    assert.ok(toolResults(main.at(-1)!.body).some((t) => t.includes(SECRET_WORD)));

    // Records: one per request, api messages; a tool_use turn, then the answer quoting the result.
    await gw.flush();
    const rows = (await gw.store.db.selectFrom('generations').selectAll().where('api', '=', 'messages').orderBy('created_at').execute()) as Json[];
    assert.equal(rows.length, upstream.requests.filter((r) => !String(r.path).includes('count_tokens')).length);
    const toolTurn = rows.findIndex((r) => r.native_finish_reason === 'tool_use' && r.finish_reason === 'tool_calls');
    assert.ok(toolTurn >= 0, 'a record of the tool_use turn');
    const answer = rows.slice(toolTurn + 1).find((r) => String(r.content).includes(SECRET_WORD));
    assert.ok(answer, 'a later record whose retained request holds the tool result');
    assert.equal(answer.status, 'success');
    assert.equal(answer.served_model, 'anthropic/claude-test');
    // Claude Code 2.1 sends its session id both in x-claude-code-session-id and in metadata.user_id (JSON form): every record has it.
    assert.match(String(result.session_id), /^[0-9a-f-]{36}$/);
    assert.deepEqual([...new Set(rows.map((r) => r.session))], [result.session_id]);
  });
});
