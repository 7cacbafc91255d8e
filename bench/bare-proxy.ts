/**
 * The bare Node proxy baseline of the benchmark (run as its own process by bench/run.ts:
 * `node --import tsx bench/bare-proxy.ts http://127.0.0.1:UPSTREAM_PORT`).
 *
 * A node:http server that forwards every request, path and body untouched, to one upstream
 * origin over an undici Pool (keep-alive), and streams the answer back untouched: no parsing,
 * validation, routing, limits, accounting or records. What the gateway costs beyond this is the
 * price of its features. Hop-by-hop headers (RFC 9110 §7.6.1) are dropped both ways.
 *
 * Listens on 127.0.0.1, port 0, prints `{"port":N}` on stdout, exits when its stdin closes.
 *
 * @see https://undici.nodejs.org/#/docs/api/Dispatcher?id=dispatcherstreamoptions-factory-callback
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const origin = process.argv[2];
if (!origin) throw new Error('usage: bare-proxy.ts UPSTREAM_ORIGIN');
// Up to 100,000 connections: the bench's slow streams hold one upstream connection each.
const pool = new Pool(origin, { connections: 100_000, keepAliveTimeout: 60_000, headersTimeout: 0, bodyTimeout: 0 });

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'host']);

function forward(headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP.has(k)) out[k] = v;
  return out;
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  pool.stream(
    { path: req.url ?? '/', method: req.method as 'POST', headers: forward(req.headers), body: req },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, forward(headers));
      return res;
    },
    (err) => {
      if (!err) return;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`bare proxy: ${err.message}`);
    },
  );
});
server.headersTimeout = 0;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;

server.listen({ port: 0, host: '127.0.0.1', backlog: 8192 }, () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
