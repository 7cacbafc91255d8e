/**
 * Zero-latency upstream for the benchmark (run as its own process by bench/run.ts:
 * `node --import tsx bench/upstream.ts`). It speaks OpenAI chat completions and Anthropic
 * Messages, so one process can stand behind the gateway's `openai` and `anthropic` provider
 * kinds and behind the baseline proxies.
 *
 * It listens on 127.0.0.1, port 0, and prints one line `{"port":N}` on stdout once it listens.
 * It exits when its stdin closes, so it never outlives the benchmark that started it.
 *
 * The first path segment picks the behaviour, so one process can act as several providers:
 *   POST /ok/v1/chat/completions    answers at once: a `chat.completion` JSON, or (for
 *                                   `"stream": true`) 20 content chunks, a finish chunk, a usage
 *                                   chunk and `data: [DONE]`; a request with `tools` gets a
 *                                   tool-call answer instead (streamed: the call's head, 4
 *                                   argument chunks, finish `tool_calls`, usage, `[DONE]`)
 *   POST /ok/v1/messages            Anthropic Messages: a `message` JSON, or (for `"stream": true`)
 *                                   the event sequence message_start, content_block_start, 20
 *                                   content_block_delta, content_block_stop, message_delta,
 *                                   message_stop (same text as the chat answer)
 *   POST /long/v1/chat/completions  like `ok`, but a stream has 200 content chunks (same finish,
 *                                   usage and [DONE]), so CPU per relayed chunk can be measured:
 *                                   (CPU/req at 200 chunks − CPU/req at 20) / 180
 *   POST /fail/v1/chat/completions  answers at once with a 503 OpenAI error envelope
 *   POST /slow/v1/chat/completions  a stream that trickles one content chunk per 100 ms (streams in 10 phase slots 10 ms apart);
 *                                   `max_completion_tokens` (or `max_tokens`) chunks (default 50), then finish, usage, [DONE]
 * Bodies are fixed and prebuilt, so the upstream does the same (minimal) work for every
 * request whether it comes from the load generator, a baseline proxy or the gateway.
 *
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://docs.anthropic.com/en/api/messages-streaming
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Behaviours this upstream knows, by first path segment. */
export const BEHAVIOURS = ['ok', 'long', 'fail', 'slow'] as const;
export type Behaviour = (typeof BEHAVIOURS)[number];

/** Content chunks of a streamed chat answer (and text deltas of a streamed Anthropic answer). */
const STREAM_CHUNKS = 20;
/** Content chunks of a streamed chat answer from the `long` behaviour. */
export const LONG_STREAM_CHUNKS = 200;
/** Interval between two chunks of a `slow` stream, in ms. */
const SLOW_CHUNK_MS = 100;

const CREATED = Math.floor(Date.now() / 1000);
const USAGE = { prompt_tokens: 5, completion_tokens: STREAM_CHUNKS, total_tokens: 5 + STREAM_CHUNKS };
const WORDS = Array.from({ length: STREAM_CHUNKS }, (_, i) => (i === 0 ? 'Hello' : ` w${i}`));
const TEXT = WORDS.join('');

const completionBody = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: CREATED,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' }],
  usage: USAGE,
});

const TOOL_ARGS = ['{"city":', ' "Par', 'is", "unit"', ': "c"}'];
const TOOL_USAGE = { prompt_tokens: 40, completion_tokens: 12, total_tokens: 52 };

const toolCallBody = JSON.stringify({
  id: 'chatcmpl-bench-tool',
  object: 'chat.completion',
  created: CREATED,
  model: 'm',
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_bench', type: 'function', function: { name: 'get_weather', arguments: TOOL_ARGS.join('') } }] },
      finish_reason: 'tool_calls',
    },
  ],
  usage: TOOL_USAGE,
});

function chunk(choices: unknown[], usage?: unknown): string {
  const body: Record<string, unknown> = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: CREATED, model: 'm', choices };
  if (usage) body.usage = usage;
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** A stream of `words`, as separate writes (one per SSE event), like a real server flushing tokens. */
function chatStreamEvents(words: string[]): string[] {
  return [
    ...words.map((w, i) => chunk([{ index: 0, delta: i === 0 ? { role: 'assistant', content: w } : { content: w }, finish_reason: null }])),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    chunk([], { prompt_tokens: 5, completion_tokens: words.length, total_tokens: 5 + words.length }),
    'data: [DONE]\n\n',
  ];
}

const streamEvents = chatStreamEvents(WORDS);
const longStreamEvents = chatStreamEvents(Array.from({ length: LONG_STREAM_CHUNKS }, (_, i) => (i === 0 ? 'Hello' : ` w${i}`)));

const toolStreamEvents: string[] = [
  chunk([{ index: 0, delta: { role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_bench', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, finish_reason: null }]),
  ...TOOL_ARGS.map((a) => chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: a } }] }, finish_reason: null }])),
  chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]),
  chunk([], TOOL_USAGE),
  'data: [DONE]\n\n',
];

const anthropicUsage = { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: STREAM_CHUNKS };

const messageBody = JSON.stringify({
  id: 'msg_bench',
  type: 'message',
  role: 'assistant',
  model: 'm',
  content: [{ type: 'text', text: TEXT }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: anthropicUsage,
});

function sse(type: string, data: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** Anthropic's streamed event sequence for one text block. */
const messageEvents: string[] = [
  sse('message_start', { message: { id: 'msg_bench', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { ...anthropicUsage, output_tokens: 1 } } }),
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ...WORDS.map((w) => sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })),
  sse('content_block_stop', { index: 0 }),
  sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: STREAM_CHUNKS } }),
  sse('message_stop', {}),
];

const failBody = JSON.stringify({ error: { message: 'bench upstream: failing on purpose', type: 'server_error', code: 'unavailable' } });

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

function sendJson(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function sendStream(res: ServerResponse, events: string[]): void {
  res.writeHead(200, SSE_HEADERS);
  for (const event of events) res.write(event);
  res.end();
}

/**
 * Open `slow` streams, spread over SLOW_SLOTS phase slots: one shared timer fires every
 * SLOW_CHUNK_MS / SLOW_SLOTS ms and writes the next chunk to the streams of one slot, so each
 * stream still gets one chunk per SLOW_CHUNK_MS but the streams are not all written in the same
 * instant (independent agents are not in phase; one burst of 5,000 writes every 100 ms would
 * measure the burst, not the streams).
 */
const SLOW_SLOTS = 10;
const slowSlots = Array.from({ length: SLOW_SLOTS }, () => new Set<SlowStream>());
let slowCount = 0;
let slowOpened = 0;
let slowSlot = 0;
let slowTimer: NodeJS.Timeout | undefined;

interface SlowStream {
  res: ServerResponse;
  left: number;
  first: boolean;
}

function tickSlow(): void {
  const slot = slowSlots[slowSlot]!;
  slowSlot = (slowSlot + 1) % SLOW_SLOTS;
  for (const s of slot) {
    if (s.left > 0) {
      s.res.write(chunk([{ index: 0, delta: s.first ? { role: 'assistant', content: 'tick' } : { content: ' tick' }, finish_reason: null }]));
      s.first = false;
      s.left--;
      continue;
    }
    s.res.write(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]));
    s.res.write(chunk([], USAGE));
    s.res.end('data: [DONE]\n\n');
    slot.delete(s);
    slowCount--;
  }
  if (slowCount === 0 && slowTimer) {
    clearInterval(slowTimer);
    slowTimer = undefined;
  }
}

function startSlow(res: ServerResponse, chunks: number): void {
  res.writeHead(200, SSE_HEADERS);
  res.flushHeaders();
  const s: SlowStream = { res, left: chunks, first: true };
  const slot = slowSlots[slowOpened++ % SLOW_SLOTS]!;
  slot.add(s);
  slowCount++;
  res.once('close', () => {
    if (slot.delete(s)) slowCount--;
  });
  slowTimer ??= setInterval(tickSlow, SLOW_CHUNK_MS / SLOW_SLOTS);
}

interface Body {
  stream?: unknown;
  tools?: unknown;
  max_tokens?: unknown;
  max_completion_tokens?: unknown;
}

function handle(req: IncomingMessage, res: ServerResponse, raw: string): void {
  const url = req.url ?? '/';
  const slash = url.indexOf('/', 1);
  const behaviour = url.slice(1, slash < 0 ? undefined : slash);
  const rest = slash < 0 ? '' : url.slice(slash);
  const api = rest === '/v1/chat/completions' ? 'chat' : rest === '/v1/messages' ? 'messages' : undefined;
  if (req.method !== 'POST' || api === undefined) {
    sendJson(res, 404, JSON.stringify({ error: { message: `bench upstream: no route ${req.method} ${url}` } }));
    return;
  }
  if (behaviour === 'fail') {
    sendJson(res, 503, failBody);
    return;
  }
  if (behaviour !== 'ok' && behaviour !== 'long' && behaviour !== 'slow') {
    sendJson(res, 404, JSON.stringify({ error: { message: `bench upstream: unknown behaviour "${behaviour}"` } }));
    return;
  }
  let body: Body;
  try {
    body = JSON.parse(raw) as Body;
  } catch {
    sendJson(res, 400, JSON.stringify({ error: { message: 'bench upstream: body is not JSON' } }));
    return;
  }
  const stream = body.stream === true;
  if (behaviour === 'slow') {
    const limit = body.max_completion_tokens ?? body.max_tokens;
    startSlow(res, typeof limit === 'number' && limit > 0 ? Math.floor(limit) : 50);
    return;
  }
  if (api === 'messages') {
    if (stream) sendStream(res, messageEvents);
    else sendJson(res, 200, messageBody);
    return;
  }
  const tools = Array.isArray(body.tools) && body.tools.length > 0;
  if (stream) sendStream(res, tools ? toolStreamEvents : behaviour === 'long' ? longStreamEvents : streamEvents);
  else sendJson(res, 200, tools ? toolCallBody : completionBody);
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

server.listen({ port: 0, host: '127.0.0.1', backlog: 8192 }, () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});

// Exit with the parent: stdin is a pipe from bench/run.ts.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
