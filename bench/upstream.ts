/**
 * Zero-latency OpenAI-compatible upstream for the benchmark (run as its own process by
 * bench/run.ts: `node --import tsx bench/upstream.ts`).
 *
 * It listens on 127.0.0.1, port 0, and prints one line `{"port":N}` on stdout once it listens.
 * It exits when its stdin closes, so it never outlives the benchmark that started it.
 *
 * The first path segment picks the behaviour, so one process can act as several providers:
 *   POST /ok/v1/chat/completions    answers at once: a `chat.completion` JSON, or (for
 *                                   `"stream": true`) 5 content chunks, a finish chunk, a usage
 *                                   chunk and `data: [DONE]`
 *   POST /fail/v1/chat/completions  answers at once with a 503 OpenAI error envelope
 * Bodies are fixed and prebuilt, so the upstream does the same (minimal) work for every
 * request whether it comes from the load generator or through the gateway.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Behaviours this upstream knows, by first path segment. */
export const BEHAVIOURS = ['ok', 'fail'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

const CREATED = Math.floor(Date.now() / 1000);
const USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
const WORDS = ['Hello', ' from', ' the', ' bench', ' upstream.'];

const completionBody = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: CREATED,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: WORDS.join('') }, finish_reason: 'stop' }],
  usage: USAGE,
});

function chunk(choices: unknown[], usage?: unknown): string {
  const body: Record<string, unknown> = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: CREATED, model: 'm', choices };
  if (usage) body.usage = usage;
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The stream, as separate writes (one per SSE event), like a real server flushing tokens. */
const streamEvents: string[] = [
  ...WORDS.map((w, i) => chunk([{ index: 0, delta: i === 0 ? { role: 'assistant', content: w } : { content: w }, finish_reason: null }])),
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
  chunk([], USAGE),
  'data: [DONE]\n\n',
];

const failBody = JSON.stringify({ error: { message: 'bench upstream: failing on purpose', type: 'server_error', code: 'unavailable' } });

function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
  const url = req.url ?? '/';
  const slash = url.indexOf('/', 1);
  const behaviour = url.slice(1, slash < 0 ? undefined : slash);
  const rest = slash < 0 ? '' : url.slice(slash);
  if (req.method !== 'POST' || rest !== '/v1/chat/completions') {
    sendJson(res, 404, JSON.stringify({ error: { message: `bench upstream: no route ${req.method} ${url}` } }));
    return;
  }
  if (behaviour === 'fail') {
    sendJson(res, 503, failBody);
    return;
  }
  if (behaviour !== 'ok') {
    sendJson(res, 404, JSON.stringify({ error: { message: `bench upstream: unknown behaviour "${behaviour}"` } }));
    return;
  }
  let stream = false;
  try {
    stream = (JSON.parse(raw) as { stream?: unknown }).stream === true;
  } catch {
    sendJson(res, 400, JSON.stringify({ error: { message: 'bench upstream: body is not JSON' } }));
    return;
  }
  if (!stream) {
    sendJson(res, 200, completionBody);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of streamEvents) res.write(event);
  res.end();
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => handle(req, res, Buffer.concat(parts).toString('utf8')));
});
// The gateway keeps up to max_connections sockets open; never refuse or time them out mid-run.
server.headersTimeout = 0;
server.requestTimeout = 0;
server.maxRequestsPerSocket = 0;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});

// Exit with the parent: stdin is a pipe from bench/run.ts.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
