/**
 * Slow and refused clients cannot tie up the gateway: request heads, whole requests and silent
 * bodies time out; a 401 closes the connection instead of reading the body; a body over the
 * limit gets a 413 that real clients (the official `openai` SDK on fetch) can read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream } from '../helpers/replay-upstream.js';

const SERVER = { headers_timeout_ms: 500, request_timeout_ms: 1500, body_idle_timeout_ms: 300, body_limit_bytes: 65_536 };

/** A raw connection: what the server sent, and when it closed (ms since connecting, or null). */
interface RawClient {
  socket: net.Socket;
  received: () => string;
  closedAfterMs: () => number | null;
  closed: Promise<void>;
}

function connect(gw: TestGateway): Promise<RawClient> {
  const port = Number(new URL(gw.origin).port);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = performance.now();
    let data = '';
    let closedAt: number | null = null;
    socket.on('data', (c) => { data += c.toString('utf8'); });
    socket.on('error', () => {});
    const closed = new Promise<void>((r) => socket.once('close', () => { closedAt = performance.now() - started; r(); }));
    socket.once('connect', () => resolve({ socket, received: () => data, closedAfterMs: () => closedAt, closed }));
    socket.once('error', reject);
  });
}

const head = (auth: string | null, length: number) =>
  `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n${auth ? `authorization: Bearer ${auth}\r\n` : ''}\r\n`;

/** Write one byte every `everyMs` until the socket closes. */
function trickle(c: RawClient, everyMs: number): void {
  const timer = setInterval(() => {
    if (c.socket.destroyed || c.socket.writableEnded) clearInterval(timer);
    else c.socket.write('x');
  }, everyMs);
  void c.closed.then(() => clearInterval(timer));
}

const withTimeout = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${what}: still open after ${ms} ms`)), ms))]);

test('client timeouts, 401 close and readable 413s', async (t) => {
  const upstream = await startUpstream();
  const gw = await startGateway(oneModelConfig(upstream.url, { root: { server: SERVER } }));
  try {
    await t.test('a 401 closes the connection instead of reading the rest of the body', async () => {
      const c = await connect(gw);
      c.socket.write(`${head(null, 100_000)}{"model":`);
      trickle(c, 50);
      await withTimeout(c.closed, 2000, '401 connection');
      assert.match(c.received(), /^HTTP\/1\.1 401 /);
      assert.match(c.received(), /\r\nconnection: close\r\n/i);
      assert.match(c.received(), /"code":"missing_api_key"/);
      assert.ok(c.closedAfterMs()! < 250, `closed after ${c.closedAfterMs()} ms`);
    });

    await t.test('a body that goes silent gets a 408 request_timeout and is closed', async () => {
      const c = await connect(gw);
      c.socket.write(`${head(gw.adminKey, 1000)}{"model":`);
      await withTimeout(c.closed, 2000, 'silent body');
      assert.match(c.received(), /^HTTP\/1\.1 408 /);
      assert.match(c.received(), /"code":"request_timeout"/);
      assert.ok(c.closedAfterMs()! >= 250, `closed after ${c.closedAfterMs()} ms`);
    });

    await t.test('a body trickled faster than the idle timeout is cut at the request timeout', async () => {
      const c = await connect(gw);
      c.socket.write(head(gw.adminKey, 100_000));
      trickle(c, 100);
      await withTimeout(c.closed, 4000, 'trickled body');
      assert.match(c.received(), /^HTTP\/1\.1 408 /);
      assert.ok(c.closedAfterMs()! >= 1400, `closed after ${c.closedAfterMs()} ms`);
    });

    await t.test('a trickled request head is cut at the headers timeout', async () => {
      const c = await connect(gw);
      c.socket.write('POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nx-slow: ');
      trickle(c, 100);
      await withTimeout(c.closed, 3000, 'trickled head');
      assert.match(c.received(), /^HTTP\/1\.1 408 /);
      // The gateway's error envelope, not the HTTP server's own body.
      assert.match(c.received(), /\r\ncontent-type: application\/json; charset=utf-8\r\n/);
      assert.equal((JSON.parse(c.received().split('\r\n\r\n')[1]!) as { error: { code: string } }).error.code, 'request_timeout');
    });

    await t.test('1,100 trickling sockets leave /health reachable and are all closed', async () => {
      // Two thirds without a key (401 and closed at once), one third with a key (cut by the
      // body idle timeout: one byte every 400 ms against 300 ms).
      const clients = await Promise.all(Array.from({ length: 1100 }, async (_, i) => {
        const c = await connect(gw);
        c.socket.write(head(i % 3 === 0 ? gw.adminKey : null, 1_000_000));
        trickle(c, 400);
        return c;
      }));
      await new Promise((r) => setTimeout(r, 500)); // the burst of 1,100 request heads is handled
      const t0 = performance.now();
      const health = await fetch(`${gw.origin}/health`);
      const healthMs = performance.now() - t0;
      t.diagnostic(`/health answered in ${healthMs.toFixed(0)} ms with 1,100 trickling sockets`);
      assert.equal(health.status, 200);
      assert.ok(healthMs < 2000, `/health took ${healthMs.toFixed(0)} ms`);
      await withTimeout(Promise.all(clients.map((c) => c.closed)), 5000, 'trickling sockets');
      // The server's side of a connection may close a moment after the client's.
      const openConnections = () => new Promise<number>((r, rej) => gw.gateway.app.server.getConnections((e, n) => (e ? rej(e) : r(n))));
      let open = await openConnections();
      for (let i = 0; i < 20 && open > 1; i++) {
        await new Promise((r) => setTimeout(r, 50));
        open = await openConnections();
      }
      assert.ok(open <= 1, `${open} connections still open`); // the keep-alive /health one
    });

    await t.test('a 413 comes after the body was read, so a client still sending sees no reset', async () => {
      // `connection: close` (HTTP/1.0 proxies, some clients): before, the gateway answered and
      // closed at once, and the client's writes failed (EPIPE / ECONNRESET) mid-body.
      const c = await connect(gw);
      let writeError: Error | undefined;
      c.socket.on('error', (e) => { writeError = e; });
      const body = Buffer.alloc(4_000_000, 'a');
      c.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer ${gw.adminKey}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`);
      c.socket.write(body);
      await withTimeout(c.closed, 5000, '413 connection');
      assert.equal(writeError, undefined, `the client's write failed: ${writeError?.message}`);
      assert.match(c.received(), /^HTTP\/1\.1 413 /);
      assert.match(c.received(), /"code":"body_too_large"/);
    });

    await t.test('the official SDK reads the 413 of a body over the limit', async () => {
      const client = new OpenAI({ apiKey: gw.adminKey, baseURL: gw.baseURL, maxRetries: 0 });
      await assert.rejects(
        client.chat.completions.create({ model: 'test/model', messages: [{ role: 'user', content: 'a'.repeat(4_000_000) }] }),
        (err: unknown) => {
          assert.ok(err instanceof OpenAI.APIError, `got ${String(err)}`);
          assert.equal(err.status, 413);
          assert.equal(err.code, 'body_too_large');
          return true;
        },
      );
      assert.equal(upstream.requests.length, 0);
    });

    await t.test('an injected request with a body (app.inject, no socket) is served, not a 500', async () => {
      const res = await gw.gateway.app.inject({
        method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${gw.adminKey}` },
        payload: { name: 'injected', rate_limit: { requests_per_minute: 1 } },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal((res.json() as { data: { rate_limit: { requests_per_minute: number } } }).data.rate_limit.requests_per_minute, 1);
    });
  } finally {
    await gw.close();
    await upstream.close();
  }
});
