/**
 * The Codex CLI with the gateway as its MCP server: CODEX_HOME/config.toml names the gateway's
 * `/mcp` under `[mcp_servers.op]` (Streamable HTTP `url`, the gateway key through
 * `bearer_token_env_var`) and the gateway as its model provider (`wire_api = "responses"`),
 * against a scripted `openai`-kind upstream that calls the tool the gateway lists as
 * `orders__lookup_order` and then answers with what it returned. The tool server is an SDK
 * `McpServer` (test/helpers/mcp-orders-upstream.ts) that records every call. Codex runs
 * offline: anything but loopback goes to a closed proxy port. Skips when the CLI is not installed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startOrdersUpstream, TRACKING, type OrdersUpstream } from '../helpers/mcp-orders-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const codexBin = path.join(here, 'node_modules', '.bin', 'codex');
const installed = existsSync(codexBin);
if (!installed) process.stderr.write(`# SKIPPED: Codex CLI MCP test: ${codexBin} is absent; run \`npm run agents:install\` first\n`);

const ORDER_ID = 'B-2207';
const RESULT = `order ${ORDER_ID}: shipped, 3 parcels, tracking ${TRACKING}`;

const chunk = (delta: Json, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'coder-1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
const usage = (p: number, c: number) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'coder-1', choices: [], usage: { prompt_tokens: p, completion_tokens: c, total_tokens: p + c } })}\n\ndata: [DONE]\n\n`;

/**
 * A scripted chat-completions upstream: a request whose tools include one named `…orders__lookup_order`
 * and that holds no tool message is answered with a call of it (the name as listed); one with a
 * tool message with text quoting it.
 */
async function startScriptedChat() {
  const requests: Json[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = (raw ? JSON.parse(raw) : {}) as Json;
      requests.push(body);
      const tool = ((body.tools ?? []) as Json[]).map((t) => String(t.function?.name ?? t.name)).find((n) => n.endsWith('orders__lookup_order'));
      const toolMessage = ((body.messages ?? []) as Json[]).filter((m) => m.role === 'tool').at(-1);
      let out: string;
      if (toolMessage) out = chunk({ role: 'assistant', content: `Codex read: ${typeof toolMessage.content === 'string' ? toolMessage.content : JSON.stringify(toolMessage.content)}` }) + chunk({}, 'stop') + usage(700, 12);
      else if (tool) out = chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_mcp1', type: 'function', function: { name: tool, arguments: '' } }] }) + chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ order_id: ORDER_ID }) } }] }) + chunk({}, 'tool_calls') + usage(650, 18);
      else out = chunk({ role: 'assistant', content: 'no MCP tool was offered' }) + chunk({}, 'stop') + usage(600, 5);
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** Run `codex exec --json <prompt>`; resolves with its exit code and output. Killed after 90 s. */
function codexExec(home: string, cwd: string, key: string, prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(codexBin, ['exec', '--skip-git-repo-check', '--json', prompt], {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH, HOME: home, CODEX_HOME: home, OPINFERENCE_API_KEY: key, OP_MCP_KEY: key,
        HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9', https_proxy: 'http://127.0.0.1:9', http_proxy: 'http://127.0.0.1:9',
        NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost',
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

describe('Codex CLI with the gateway as its MCP server', { skip: !installed && 'Codex CLI not installed (npm run agents:install)' }, () => {
  let model: Awaited<ReturnType<typeof startScriptedChat>>;
  let orders: OrdersUpstream;
  let gw: TestGateway;
  let home: string;
  let work: string;

  before(async () => {
    model = await startScriptedChat();
    orders = await startOrdersUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [{ id: 'up', kind: 'openai', base_url: model.url, api_key: 'sk-up' }],
      models: [{ id: 'test/coder', context_length: 200000, endpoints: [{ provider: 'up', upstream_model: 'coder-1', pricing: { prompt: 1, completion: 2 }, supported_parameters: ['tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'temperature', 'max_tokens', 'max_completion_tokens'] }] }],
      mcp_servers: [{ id: 'orders', transport: 'streamable_http', url: orders.url }],
    });
    home = mkdtempSync(path.join(tmpdir(), 'op-codex-mcp-home-'));
    work = mkdtempSync(path.join(tmpdir(), 'op-codex-mcp-work-'));
    writeFileSync(path.join(home, 'config.toml'), [
      'model = "test/coder"',
      'model_provider = "opinference"',
      '[model_providers.opinference]',
      'name = "opinference"',
      `base_url = "${gw.baseURL}"`,
      'env_key = "OPINFERENCE_API_KEY"',
      'wire_api = "responses"',
      '[mcp_servers.op]',
      `url = "${gw.origin}/mcp"`,
      'bearer_token_env_var = "OP_MCP_KEY"',
      // codex exec runs with approval_policy "never": an MCP tool call needs approval unless the server's tools are pre-approved.
      'default_tools_approval_mode = "approve"',
      '',
    ].join('\n'));
  });
  after(async () => {
    await gw?.close();
    await model?.close();
    await orders?.close();
    if (home) rmSync(home, { recursive: true, force: true });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('codex exec calls the gateway\'s orders__lookup_order once with the model\'s arguments; the second turn sees its result', async () => {
    const key = await gw.createKey('codex-mcp');
    const run = await codexExec(home, work, key.secret, `What is the status of order ${ORDER_ID}?`);
    const events = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Json);
    assert.equal(run.code, 0, `codex exited with ${run.code}\n${run.stdout}\n${run.stderr.slice(-2000)}`);

    const call = events.find((e) => e.type === 'item.completed' && e.item.type === 'mcp_tool_call');
    assert.ok(call, run.stdout);
    assert.equal(call.item.server, 'op');
    assert.equal(call.item.tool, 'orders__lookup_order');
    assert.equal(call.item.status, 'completed');
    const answer = events.filter((e) => e.type === 'item.completed' && e.item.type === 'agent_message').at(-1);
    assert.match(String(answer?.item.text), new RegExp(`^Codex read: .*${RESULT}`));

    // The tool server saw exactly one call with the model's arguments.
    assert.deepEqual(orders.calls, [{ name: 'lookup_order', arguments: { order_id: ORDER_ID } }]);
    assert.ok(!JSON.stringify(orders.headers).includes(key.secret), 'the gateway key reached the tool server');

    // The model's second turn carried the tool's result as the tool message of its call.
    assert.equal(model.requests.length, 2);
    const toolMessage = (model.requests[1]!.messages as Json[]).find((m) => m.role === 'tool');
    assert.equal(toolMessage?.tool_call_id, 'call_mcp1');
    assert.match(JSON.stringify(toolMessage?.content), new RegExp(RESULT));
  });
});
