/**
 * Tool servers that misbehave, beyond the single cases of mcp-gateway.test.ts: a hanging call
 * does not hold up other calls in flight (same session, same server, another server); a stdio
 * child that exits while calls are in flight fails all of them at once (not at timeout_ms) and
 * the next call starts a new child; a 50 MB result from an upstream in its own process is refused
 * with the gateway's RSS kept well below the result's size; an upstream that forgets its
 * sessions is re-initialised for lists as well as calls.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';

const CRASHING = fileURLToPath(new URL('../fixtures/mcp-stdio-crashing-server.mjs', import.meta.url));
const SERVER_PROCESS = fileURLToPath(new URL('../fixtures/mcp-http-server-process.ts', import.meta.url));
const MB = 1024 * 1024;

let gw: TestGateway;
let slow: McpUpstream;
let other: McpUpstream;
let child: ChildProcess;
const clients: Client[] = [];

const textOf = (r: unknown): string => ((r as CallToolResult).content[0] as { text: string }).text;

async function connect(): Promise<Client> {
  const { secret } = await gw.createKey();
  const client = new Client({ name: 'faults', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${secret}` } } }));
  clients.push(client);
  return client;
}

/** The McpError a call rejects with, and how long it took (ms). */
async function failure(p: Promise<unknown>): Promise<{ err: McpError; ms: number }> {
  const started = Date.now();
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof McpError, `expected an McpError, got ${String(err)}`);
    return { err, ms: Date.now() - started };
  }
  assert.fail('the call succeeded');
}

/** Start the test upstream in a child process (node --import tsx); resolves with its URL. */
function startChildUpstream(): Promise<{ url: string; child: ChildProcess }> {
  const c = spawn(process.execPath, ['--import', 'tsx', SERVER_PROCESS, 'big'], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    c.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve({ url: (JSON.parse(line) as { url: string }).url, child: c });
    });
    c.on('exit', (code) => reject(new Error(`the upstream process exited with ${code}`)));
  });
}

before(async () => {
  slow = await startMcpUpstream('slow');
  other = await startMcpUpstream('other');
  const big = await startChildUpstream();
  child = big.child;
  gw = await startGateway({
    mcp_servers: [
      { id: 'slow', transport: 'streamable_http', url: slow.url, timeout_ms: 1500 },
      { id: 'other', transport: 'streamable_http', url: other.url },
      { id: 'crashy', transport: 'stdio', command: process.execPath, args: [CRASHING], timeout_ms: 10_000 },
      { id: 'big', transport: 'streamable_http', url: big.url, max_result_bytes: 256 * 1024, timeout_ms: 30_000 },
    ],
  });
});

after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await gw?.close();
  await slow?.close();
  await other?.close();
  child?.stdin?.end();
  child?.kill();
});

describe('MCP gateway: misbehaving tool servers', () => {
  test('while one call hangs, other calls on the same session (same server and another) answer at once; the hang ends at timeout_ms', async () => {
    const client = await connect();
    const started = Date.now();
    let hangEnded = false;
    const hanging = failure(client.callTool({ name: 'slow__hang' })).finally(() => (hangEnded = true));
    await new Promise((r) => setTimeout(r, 100));
    const quick = await Promise.all([
      client.callTool({ name: 'slow__echo', arguments: { text: 'same server' } }),
      client.callTool({ name: 'other__add', arguments: { a: 20, b: 22 } }),
      client.listTools(),
    ]);
    const quickMs = Date.now() - started;
    assert.equal(textOf(quick[0]), 'slow:same server');
    assert.equal(textOf(quick[1]), '42');
    assert.ok(quick[2].tools.some((t) => t.name === 'slow__hang'));
    // Not held up: they answered while the hanging call was still waiting for its timeout
    // (an order, not a time bound that a busy machine could pass or fail by chance).
    assert.equal(hangEnded, false, `the other calls took ${quickMs} ms and answered only after the hanging one ended`);
    const { err, ms } = await hanging;
    assert.deepEqual(err.data, { code: 'mcp_upstream_timeout' });
    assert.equal(err.code, -32001);
    assert.match(err.message, /timeout_ms \(1500 ms\)/);
    assert.ok(ms >= 1300 && ms < 6000, `the hang ended after ${ms} ms`);
  });

  test('a stdio child that exits mid-call fails every call in flight at once, and the next call starts a new child', async () => {
    const client = await connect();
    const pid = textOf(await client.callTool({ name: 'crashy__pid' }));
    const inFlight = failure(client.callTool({ name: 'crashy__slow', arguments: { ms: 8000 } }));
    await new Promise((r) => setTimeout(r, 200));
    const crash = await failure(client.callTool({ name: 'crashy__crash' }));
    assert.deepEqual(crash.err.data, { code: 'mcp_upstream_unavailable' });
    const dropped = await inFlight;
    assert.deepEqual(dropped.err.data, { code: 'mcp_upstream_unavailable' });
    assert.match(dropped.err.message, /its process exited/);
    assert.ok(dropped.ms < 5000, `the call in flight failed after ${dropped.ms} ms, not when its child exited`);
    const next = textOf(await client.callTool({ name: 'crashy__pid' }));
    assert.match(next, /^\d+$/);
    assert.notEqual(next, pid, 'a new child process');
    assert.equal(textOf(await client.callTool({ name: 'crashy__slow', arguments: { ms: 10 } })), 'slept 10');
  });

  test('a 50 MB result is refused with max_result_bytes, the gateway process grows by far less than 50 MB, and the next call works', async (t) => {
    const client = await connect();
    assert.equal(textOf(await client.callTool({ name: 'big__big', arguments: { bytes: 1000 } })).length, 1000);
    global.gc?.();
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const { err } = await failure(client.callTool({ name: 'big__big', arguments: { bytes: 50 * MB } }));
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().rss);
    assert.deepEqual(err.data, { code: 'mcp_result_too_large' });
    assert.match(err.message, /max_result_bytes \(262144 bytes\)/);
    const grewMb = (peak - base) / MB;
    t.diagnostic(`gateway RSS peak growth for a refused 50 MB result: ${grewMb.toFixed(1)} MB`);
    assert.ok(grewMb < 25, `the gateway's RSS grew by ${grewMb.toFixed(1)} MB for a refused 50 MB result`);
    assert.equal(textOf(await client.callTool({ name: 'big__echo', arguments: { text: 'after' } })), 'big:after');
  });

  test('an upstream that forgot its session is re-initialised for tools/list too, the client session unbroken', async () => {
    const client = await connect();
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'other__echo'));
    const inits = other.initializes;
    other.dropSessions();
    assert.ok((await client.listTools()).tools.some((t) => t.name === 'other__echo'));
    assert.equal(other.initializes, inits + 1, 'one new upstream session for the list');
    assert.equal(textOf(await client.callTool({ name: 'other__echo', arguments: { text: 'still' } })), 'other:still');
    assert.equal(other.initializes, inits + 1, 'the call reused it');
  });
});
