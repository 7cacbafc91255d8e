/**
 * The Claude Code CLI with the gateway as its MCP server: `claude -p --mcp-config <file>` whose
 * JSON names the gateway's `/mcp` (Streamable HTTP) with a gateway key as `Authorization: Bearer`,
 * and ANTHROPIC_BASE_URL at the gateway too, against a scripted `anthropic` upstream on port 0
 * that asks for the MCP tool `mcp__op__orders__lookup_order` and then answers with what the tool
 * returned. The tool server is an SDK `McpServer` (test/helpers/mcp-orders-upstream.ts) that
 * records every call: it must see exactly one, with the model's arguments, and never the key.
 * Skips, saying why, when the CLI is not installed (npm run agents:install).
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
import { startOrdersUpstream, TRACKING, type OrdersUpstream } from '../helpers/mcp-orders-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const here = path.dirname(fileURLToPath(import.meta.url));
const CLAUDE = path.join(here, 'node_modules', '.bin', 'claude');
const skip = existsSync(CLAUDE) ? false : `Claude Code CLI not installed (${path.relative(process.cwd(), CLAUDE)} missing): run npm run agents:install`;
if (skip) console.warn(`\n*** SKIPPED: ${skip} ***\n`);

/** The name Claude Code gives the gateway's `orders__lookup_order` under the MCP server it calls `op`. */
const TOOL = 'mcp__op__orders__lookup_order';
const ORDER_ID = 'A-1138';

/** Anthropic SSE for one message made of the given blocks (text or tool_use). */
function messageEvents(model: string, blocks: Json[], stopReason: string): string {
  const ev = (data: Json) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
  let out = ev({ type: 'message_start', message: { id: `msg_${Date.now()}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 150, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } } });
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

/** The text of every tool_result block of a request's last user message (Claude Code's own `<system-reminder>` blocks left out, trimmed). */
function toolResults(body: Json): string[] {
  const last = (body.messages as Json[] | undefined)?.at(-1);
  if (!last || last.role !== 'user' || !Array.isArray(last.content)) return [];
  const text = (content: unknown): string =>
    typeof content === 'string' ? content : (content as Json[]).filter((c) => c.type === 'text' && !String(c.text).startsWith('<system-reminder>')).map((c) => String(c.text)).join('');
  return (last.content as Json[]).filter((b) => b.type === 'tool_result').map((b) => text(b.content).trim());
}

/**
 * A scripted Anthropic upstream: a request offering {@link TOOL} and holding no tool result is
 * answered with a call of it; one carrying a tool result with text quoting it; anything else
 * (Claude Code's background calls) with a short text.
 */
async function startScriptedAnthropic() {
  const requests: Json[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const body = (raw ? JSON.parse(raw) : {}) as Json;
      requests.push({ path: req.url, headers: req.headers, body });
      if (req.url?.includes('count_tokens')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: 100 }));
      const offersTool = Array.isArray(body.tools) && (body.tools as Json[]).some((t) => t.name === TOOL);
      const results = toolResults(body);
      let blocks: Json[] = [{ type: 'text', text: 'ok' }];
      let stop = 'end_turn';
      if (results.length > 0) blocks = [{ type: 'text', text: `Order status from the tool: ${results.join(' ')}` }];
      else if (offersTool) {
        blocks = [{ type: 'tool_use', id: 'toolu_01OrderLookup', name: TOOL, input: { order_id: ORDER_ID } }];
        stop = 'tool_use';
      }
      if (body.stream) return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(messageEvents(body.model, blocks, stop));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        id: 'msg_plain', type: 'message', role: 'assistant', model: body.model, stop_reason: stop, stop_sequence: null, content: blocks, usage: { input_tokens: 150, output_tokens: 20 },
      }));
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

describe('Claude Code CLI with the gateway as its MCP server', { skip }, () => {
  let gw: TestGateway;
  let model: Awaited<ReturnType<typeof startScriptedAnthropic>>;
  let orders: OrdersUpstream;
  let work: string;

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'op-claude-mcp-'));
    model = await startScriptedAnthropic();
    orders = await startOrdersUpstream();
    gw = await startGateway({
      retention: 7,
      providers: [{ id: 'anth', kind: 'anthropic', base_url: model.url, api_key: 'sk-ant-upstream' }],
      models: [{
        id: 'anthropic/claude-test', name: 'Claude test', context_length: 200000, aliases: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
        endpoints: [{ provider: 'anth', upstream_model: 'claude-test-upstream', pricing: { prompt: 3, completion: 15 }, supported_parameters: ['max_tokens', 'temperature', 'tools', 'tool_choice', 'reasoning'] }],
      }],
      mcp_servers: [{ id: 'orders', transport: 'streamable_http', url: orders.url, headers: { Authorization: 'Bearer orders-upstream-token' } }],
    });
  });
  after(async () => {
    await gw?.close();
    await model?.close();
    await orders?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('claude -p --mcp-config calls the gateway\'s orders__lookup_order once with the model\'s arguments; the second turn sees its result', async () => {
    const { secret } = await gw.createKey('claude-code-mcp');
    const home = path.join(work, 'home');
    const project = path.join(work, 'project');
    mkdirSync(home, { recursive: true });
    mkdirSync(project, { recursive: true });
    const mcpConfig = path.join(work, 'mcp.json');
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { op: { type: 'http', url: `${gw.origin}/mcp`, headers: { Authorization: `Bearer ${secret}` } } } }));
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), TMPDIR: tmpdir(),
      ANTHROPIC_BASE_URL: gw.origin, ANTHROPIC_API_KEY: secret, ANTHROPIC_MODEL: 'claude-sonnet-4-5', ANTHROPIC_SMALL_FAST_MODEL: 'claude-haiku-4-5',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-4-5', ANTHROPIC_DEFAULT_SONNET_MODEL: 'claude-sonnet-4-5', ANTHROPIC_DEFAULT_OPUS_MODEL: 'claude-sonnet-4-5',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CI: '1',
      // Claude Code 2.1 defers MCP tools behind its ToolSearch tool by default; listed directly, the model is offered the tool itself.
      ENABLE_TOOL_SEARCH: 'false',
    };
    const out = await run(CLAUDE, ['-p', `What is the status of order ${ORDER_ID}?`, '--output-format', 'json', '--mcp-config', mcpConfig, '--strict-mcp-config', '--allowedTools', TOOL, '--max-turns', '4'], {
      cwd: project, env, timeoutMs: 120_000,
    });
    assert.equal(out.code, 0, `claude exited with ${out.code}\nstdout: ${out.stdout.slice(0, 2000)}\nstderr: ${out.stderr.slice(0, 2000)}`);
    const result = JSON.parse(out.stdout) as Json;
    assert.equal(result.is_error, false, out.stdout);
    assert.equal(result.result, `Order status from the tool: order ${ORDER_ID}: shipped, 3 parcels, tracking ${TRACKING}`);

    // The tool server saw exactly one call, with the model's arguments, and only its configured header.
    assert.deepEqual(orders.calls, [{ name: 'lookup_order', arguments: { order_id: ORDER_ID } }]);
    assert.ok(orders.headers.length > 0);
    for (const h of orders.headers) assert.equal(h.authorization, 'Bearer orders-upstream-token');
    assert.ok(!JSON.stringify(orders.headers).includes(secret), 'the gateway key reached the tool server');

    // The model: the first turn offered the gateway's tool under Claude Code's MCP name, the second carried its result.
    const withTool = model.requests.filter((r) => Array.isArray(r.body.tools) && r.body.tools.some((t: Json) => t.name === TOOL));
    assert.ok(withTool.length >= 2, `expected two turns offering ${TOOL}, got ${withTool.length}`);
    const offered = (withTool[0]!.body.tools as Json[]).find((t) => t.name === TOOL)!;
    assert.match(String(offered.description), /Look up an order by its id/);
    assert.deepEqual(offered.input_schema.required, ['order_id']);
    assert.deepEqual(toolResults(withTool.at(-1)!.body), [`order ${ORDER_ID}: shipped, 3 parcels, tracking ${TRACKING}`]);
  });
});
