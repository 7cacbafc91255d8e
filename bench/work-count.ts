/**
 * The fixed in-process workload of the instruction-count guard (bench/work-guard.ts, `npm run
 * bench:work`; docs/performance.md "Instruction-count guard"). It is not run by hand: the guard
 * transpiles it with esbuild and runs it under `valgrind --tool=callgrind` with V8 in
 * single-threaded mode, so that what one request costs is counted in CPU instructions instead
 * of measured in time.
 *
 * One process holds everything, on 127.0.0.1 and ports 0: a tiny `node:http` upstream with
 * fixed, prebuilt bodies (OpenAI chat completions, 20-chunk streams, Anthropic Messages), the
 * built gateway (`buildGateway` from `dist/`, a SQLite file, a key with rpm/tpm and a USD limit,
 * so every request is authenticated, limited, routed, relayed and recorded) and a `node:http`
 * client with one keep-alive socket that sends the requests one after the other.
 *
 * Phases are marked for callgrind by calling `os.getPriority()` (libc `getpriority`, which
 * nothing else in the process calls): the guard passes `--dump-before=getpriority`, so each call
 * writes the counters gathered since the previous one to a file of its own. The phases, in order:
 *   1. start-up and warm-up (every scenario, `warmup` requests each, direct and through the gateway);
 *   2. for each scenario: `requests` requests straight to the upstream (the client's and the
 *      upstream's own cost), then `requests` requests through the gateway (records in `strict`
 *      durability: each committed with its request, so no batch depends on timing);
 *   3. shutdown (after the last mark, not used).
 * After each phase a full GC runs in a phase of its own (`gc`, not used), so every measured
 * phase starts from a collected heap.
 * The gateway's instructions per request of a scenario = (gateway phase − direct phase) / requests.
 *
 * argv: `<dist dir> <work dir> <warmup> <requests> <scenario ids, comma-separated>`.
 * It prints one JSON line on stdout at the end: `{"phases":["warmup","chat:direct","chat:gateway",…]}`
 * (the order of the marks) and exits 0; any failed request or unexpected answer exits 1.
 *
 * @see https://valgrind.org/docs/manual/cl-manual.html#cl-manual.options.activity
 */
import { Agent, createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { buildGateway as BuildGateway } from '../src/server/app.js';
import type { parseConfig as ParseConfig } from '../src/config/load.js';
import type { openDatabase as OpenDatabaseFn } from '../src/store/database.js';
import type { migrate as Migrate } from '../src/store/migrations.js';
import type { createKey as CreateKey } from '../src/store/keys.js';
import { WORK_SCENARIOS, type WorkScenario } from './work-scenarios.js';

const [distDir, workDir, warmupArg, requestsArg, scenarioArg] = process.argv.slice(2);
if (!distDir || !workDir || !warmupArg || !requestsArg || !scenarioArg) throw new Error('usage: work-count <dist dir> <work dir> <warmup> <requests> <scenarios>');
const WARMUP = Number(warmupArg);
const REQUESTS = Number(requestsArg);
const SCENARIOS: WorkScenario[] = scenarioArg.split(',').map((id) => {
  const s = WORK_SCENARIOS.find((x) => x.id === id);
  if (!s) throw new Error(`work-count: unknown scenario ${id}`);
  return s;
});

async function load<T>(path: string, name: string): Promise<T> {
  const mod = (await import(pathToFileURL(join(distDir!, path)).href)) as Record<string, unknown>;
  return mod[name] as T;
}

// ---------------------------------------------------------------------------------------------
// Upstream: fixed bodies, built once.

const WORDS = Array.from({ length: 20 }, (_, i) => (i === 0 ? 'Hello' : ` w${i}`));
const TEXT = WORDS.join('');
const USAGE = { prompt_tokens: 5, completion_tokens: 20, total_tokens: 25 };
const CREATED = 1_700_000_000;
const completionBody = JSON.stringify({ id: 'chatcmpl-work', object: 'chat.completion', created: CREATED, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: TEXT }, finish_reason: 'stop' }], usage: USAGE });
const chunk = (choices: unknown[], usage?: unknown) => `data: ${JSON.stringify({ id: 'chatcmpl-work', object: 'chat.completion.chunk', created: CREATED, model: 'm', choices, ...(usage ? { usage } : {}) })}\n\n`;
const streamBody = [
  ...WORDS.map((w, i) => chunk([{ index: 0, delta: i === 0 ? { role: 'assistant', content: w } : { content: w }, finish_reason: null }])),
  chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
  chunk([], USAGE),
  'data: [DONE]\n\n',
].join('');
const anthropicUsage = { input_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 20 };
const messageBody = JSON.stringify({ id: 'msg_work', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: TEXT }], stop_reason: 'end_turn', stop_sequence: null, usage: anthropicUsage });
const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const messageStream = [
  sse('message_start', { message: { id: 'msg_work', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { ...anthropicUsage, output_tokens: 1 } } }),
  sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ...WORDS.map((w) => sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: w } })),
  sse('content_block_stop', { index: 0 }),
  sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20 } }),
  sse('message_stop', {}),
].join('');

function answer(req: IncomingMessage, res: ServerResponse, raw: string): void {
  const stream = raw.includes('"stream":true');
  const messages = req.url === '/v1/messages';
  const body = messages ? (stream ? messageStream : messageBody) : stream ? streamBody : completionBody;
  // One write per answer: the same bytes arrive in the same reads on every run.
  res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const upstream = createServer({ keepAliveTimeout: 600_000 }, (req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => answer(req, res, Buffer.concat(parts).toString('utf8')));
});
upstream.headersTimeout = 0;
upstream.requestTimeout = 0;
await new Promise<void>((r) => upstream.listen({ port: 0, host: '127.0.0.1' }, r));
const upstreamOrigin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

// ---------------------------------------------------------------------------------------------
// Gateway: built from dist/ as the tests build it, every per-request feature on.

const buildGateway = await load<typeof BuildGateway>('src/server/app.js', 'buildGateway');
const parseConfig = await load<typeof ParseConfig>('src/config/load.js', 'parseConfig');
const openDatabase = await load<typeof OpenDatabaseFn>('src/store/database.js', 'openDatabase');
const migrate = await load<typeof Migrate>('src/store/migrations.js', 'migrate');
const createKey = await load<typeof CreateKey>('src/store/keys.js', 'createKey');

const store = openDatabase(`sqlite:${join(workDir, 'work.db')}`);
await migrate(store.db);
const { secret } = await createKey(store.db, 'work', null, { limit: '1000000', limit_reset: 'monthly', rate_limit: { requests_per_minute: 1_000_000_000, tokens_per_minute: 1_000_000_000_000 } });
const config = parseConfig(
  {
    // `strict`: each record is committed with its own request. In `batched` mode a batch starts
    // when its oldest row is older than a bound that follows the measured write durations and
    // timer delays, so the number of batches in a phase (and its count) moved with how slowly
    // valgrind ran and how busy the machine was: chat-long varied by 6 % between two runs.
    records: { durability: 'strict' },
    // Under valgrind the event loop is ~50x slower: the overload guard would refuse the workload.
    server: { overload: { max_event_loop_delay_ms: 0 } },
    routing: { circuit_breaker: { failure_threshold: 1_000_000_000 } },
    providers: [
      { id: 'up', kind: 'openai', base_url: `${upstreamOrigin}/v1`, api_key: 'sk-work' },
      { id: 'anth', kind: 'anthropic', base_url: upstreamOrigin, api_key: 'sk-ant-work' },
    ],
    models: SCENARIOS.map((s) => ({ id: `work/${s.id}`, context_length: 65_536, endpoints: [{ provider: s.kind === 'anthropic' ? 'anth' : 'up', upstream_model: 'm', pricing: { prompt: 1, completion: 2 } }] })),
  },
  'work-count',
  {},
);
const gateway = buildGateway({ loaded: { config, source: 'work-count' }, db: store.db, adminKey: 'work-admin-key', logger: { level: 'warn' }, purgeIntervalMs: 0, random: () => 0.5 });
await gateway.app.listen({ port: 0, host: '127.0.0.1' });
const gatewayPort = (gateway.app.server.address() as AddressInfo).port;

// ---------------------------------------------------------------------------------------------
// Client: one keep-alive socket per target, requests one after the other.

const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function send(port: number, path: string, headers: Record<string, string>, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        if (res.statusCode !== 200) reject(new Error(`work-count: ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`));
        else resolve(text);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Call {
  port: number;
  path: string;
  headers: Record<string, string>;
  body: string;
  check: (text: string) => boolean;
}

function gatewayCall(s: WorkScenario): Call {
  const body = JSON.stringify({ model: `work/${s.id}`, messages: [{ role: 'user', content: s.prompt }], stream: s.stream });
  // Streams are checked for the relayed text's last word and the end marker; bodies for the whole text.
  const check = s.stream ? (t: string) => t.includes('w19') && t.includes('[DONE]') : (t: string) => t.includes(TEXT);
  return { port: gatewayPort, path: '/v1/chat/completions', headers: { authorization: `Bearer ${secret}` }, body, check };
}

function directCall(s: WorkScenario): Call {
  const port = (upstream.address() as AddressInfo).port;
  if (s.kind === 'anthropic') {
    const body = JSON.stringify({ model: 'm', max_tokens: 1024, messages: [{ role: 'user', content: s.prompt }], stream: s.stream });
    return { port, path: '/v1/messages', headers: { 'x-api-key': 'sk-ant-work', 'anthropic-version': '2023-06-01' }, body, check: (t) => t.includes('w19') };
  }
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: s.prompt }], stream: s.stream });
  return { port, path: '/v1/chat/completions', headers: { authorization: 'Bearer sk-work' }, body, check: (t) => t.includes('w19') };
}

async function run(call: Call, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const text = await send(call.port, call.path, call.headers, call.body);
    if (!call.check(text)) throw new Error(`work-count: unexpected answer from ${call.path}: ${text.slice(0, 300)}`);
  }
}

const phases: string[] = [];
/** End the current phase: callgrind dumps its counters on entering libc `getpriority`. */
function mark(name: string): void {
  phases.push(name);
  os.getPriority();
}

const flush = () => gateway.runtime().writer.flush();
const collect = (globalThis as { gc?: () => void }).gc;
if (!collect) throw new Error('work-count: run with --expose-gc');
/** End a phase, then a full GC in a phase of its own (`gc`, not counted): every phase starts from a collected heap. */
async function endPhase(name: string): Promise<void> {
  await flush();
  mark(name);
  collect!();
  mark('gc');
}

for (const s of SCENARIOS) {
  await run(directCall(s), WARMUP);
  await run(gatewayCall(s), WARMUP);
}
await endPhase('warmup');
for (const s of SCENARIOS) {
  await run(directCall(s), REQUESTS);
  await endPhase(`${s.id}:direct`);
  await run(gatewayCall(s), REQUESTS);
  await endPhase(`${s.id}:gateway`);
}

process.stdout.write(`${JSON.stringify({ phases })}\n`);
agent.destroy();
await gateway.close();
await store.close();
upstream.close();
process.exit(0);
