/**
 * Gateway overhead benchmark (`npm run bench`, after `npm run build`).
 *
 * Starts, each as its own process on 127.0.0.1: a zero-latency upstream (bench/upstream.ts),
 * the bare Node proxy baseline (bench/bare-proxy.ts), nginx with `proxy_pass` when installed,
 * and the built gateway (dist/src/cli.js) with every feature on (a key made by `keys create`
 * with rpm/tpm and a USD limit, records in SQLite, metrics, health and breaker). Then, for every
 * scenario and every target (direct, bare Node, nginx, opinference), it measures:
 *   - latency at c=1: requests back to back; p50/p99 of the full response time (streams: until
 *     the last byte) at sub-ms precision (autocannon's per-response timings);
 *   - saturation at c=32 (BENCH_CONNECTIONS): 2xx responses per second (wrk when installed,
 *     else autocannon; BENCH_LOADGEN picks);
 *   - each proxy's CPU µs per request at both: utime+stime of its process tree (/proc) over the
 *     run, divided by the 2xx count.
 * Then the ratios against their targets (opinference / bare Node, added over direct, 16 KB /
 * short prompt, translated / OpenAI) and a memory section (RSS after 200k requests; 5,000
 * concurrent slow streams with /health p99 meanwhile). Prints a Markdown report and writes it to
 * bench/results/latest.md.
 *
 * Modes (arguments after `npm run bench --`):
 *   --quick   CI guard: chat and chat-stream at c=32, bare Node and opinference only, 2 s runs;
 *             prints the ratios, writes no file, exits 1 only if opinference's CPU per request
 *             at c=32 is worse than 6× bare Node's (a gross regression; CI machines are noisy; the
 *             target of issue #12 is 2×, see docs/performance.md).
 *   --memory  only the memory section (written to bench/results/memory.md).
 *
 * Settings can be overridden by environment variables (seconds / counts):
 *   BENCH_LATENCY_S (5), BENCH_SATURATION_S (8), BENCH_WARMUP_S (1), BENCH_CONNECTIONS (32),
 *   BENCH_ONLY (comma-separated scenario ids), BENCH_TARGETS (comma-separated of direct, bare,
 *   nginx, gateway), BENCH_LOADGEN (wrk | autocannon), BENCH_MEMORY (0 skips the memory section),
 *   BENCH_MEMORY_REQUESTS (200000), BENCH_SLOW_STREAMS (5000), BENCH_SLOW_CHUNKS (3000), BENCH_SLOW_HOLD_S (10),
 *   BENCH_TRACING (0 skips the tracing comparison), BENCH_TRACING_ROUNDS (3), BENCH_KEEP_TEMP (1 keeps the
 *   temp folder: configs, SQLite files, gateway logs).
 *
 * Tracing on vs off: after the scenarios, a second gateway with OTEL_EXPORTER_OTLP_ENDPOINT set
 * (exporting to an OTLP/HTTP sink in this process) serves the `chat` and `chat-stream` scenarios
 * in alternating rounds with the first gateway (no OTEL_* variable: SDK not loaded), and the report
 * compares the medians.
 * BENCH_WORKERS=1,2 instead measures `serve --workers N` for each N listed: saturation throughput
 * of non-streaming chat through the gateway (OP_REDIS_URL from the environment, default the local
 * Redis, with a prefix of the run's own), written to bench/results/workers.md.
 * For comparisons and profiling: BENCH_CLI (another built cli.js to run as the gateway) and
 * BENCH_GATEWAY_NODE_ARGS (extra node flags for the gateway only, e.g.
 * "--cpu-prof --cpu-prof-dir=/tmp/prof").
 *
 * To add a scenario, append to SCENARIOS: it names the upstream behaviours behind the model
 * (in routing order) and the one the baselines call. Behaviours are the path prefixes
 * bench/upstream.ts serves (`ok`, `fail`, `slow`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { EventEmitter } from 'node:events';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { stringify as toYaml } from 'yaml';
import type { LiveResult, LoadCommand, OpenResult } from './stream-load.js';
import type { Behaviour } from './upstream.js';
import { prose } from './prose.js';

// ---------------------------------------------------------------------------------------------
// Scenarios

/** One benchmark scenario. */
interface Scenario {
  /** Slug: the gateway model is `bench/<id>`; `BENCH_ONLY` selects by it. */
  id: string;
  /** Label in the report. */
  name: string;
  stream: boolean;
  /** Upstream behaviours behind the model's endpoints, in routing order (one provider each). */
  endpoints: Behaviour[];
  /** Behaviour the direct and proxy baselines call; default: the last endpoint (the one expected to serve). */
  direct?: Behaviour;
  /**
   * Provider kind of the endpoints: `openai` (default) or `anthropic`. For `anthropic` the client
   * still sends OpenAI chat to the gateway, which translates to Messages and back; the baselines
   * send a native Messages request (`POST /<behaviour>/v1/messages`) to the same upstream.
   */
  kind?: 'openai' | 'anthropic';
  /** The user message; default "hi". */
  prompt?: string;
  /** Extra request fields (merged into the body after model/messages/stream). */
  extraBody?: Record<string, unknown>;
}


const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] },
  },
};
const TOOL_BODY = { tools: [WEATHER_TOOL], tool_choice: 'auto' };
const FAILOVER_BODY = { provider: { order: ['up-fail', 'up-ok'] } };

const SCENARIOS: Scenario[] = [
  { id: 'chat', name: 'chat, non-streaming', stream: false, endpoints: ['ok'] },
  { id: 'chat-stream', name: 'chat, streaming (20 chunks)', stream: true, endpoints: ['ok'] },
  // With chat-stream: CPU per relayed chunk = (CPU/req here − CPU/req there) / 180.
  { id: 'chat-stream-200', name: 'chat, streaming (200 chunks)', stream: true, endpoints: ['long'] },
  { id: 'chat-long', name: 'chat, non-streaming, 16 KB prompt', stream: false, endpoints: ['ok'], prompt: prose(16_000) },
  { id: 'tool', name: 'chat, tool call, non-streaming', stream: false, endpoints: ['ok'], prompt: 'Weather in Paris?', extraBody: TOOL_BODY },
  { id: 'tool-stream', name: 'chat, tool call, streaming', stream: true, endpoints: ['ok'], prompt: 'Weather in Paris?', extraBody: TOOL_BODY },
  { id: 'anthropic', name: 'chat → Anthropic Messages upstream, non-streaming', stream: false, endpoints: ['ok'], kind: 'anthropic' },
  { id: 'anthropic-stream', name: 'chat → Anthropic Messages upstream, streaming (20 deltas)', stream: true, endpoints: ['ok'], kind: 'anthropic' },
  // One failover: the first endpoint (by provider.order) answers 503 at once, the second serves.
  // The baselines call `ok`, so "added" is the gateway plus one failed attempt.
  { id: 'failover', name: 'chat, non-streaming, first endpoint fails at once, second serves', stream: false, endpoints: ['fail', 'ok'], extraBody: FAILOVER_BODY },
  { id: 'failover-stream', name: 'chat, streaming, first endpoint fails at once, second serves', stream: true, endpoints: ['fail', 'ok'], extraBody: FAILOVER_BODY },
];

/** The memory section's slow streams: one chunk per 100 ms from the `slow` upstream. */
const SLOW_SCENARIO: Scenario = { id: 'slow', name: 'slow stream', stream: true, endpoints: ['slow'] };

/** Scenarios of `--quick`. */
const QUICK_SCENARIOS = ['chat', 'chat-stream'];

// ---------------------------------------------------------------------------------------------
// Settings

const ARGS = new Set(process.argv.slice(2));
const QUICK = ARGS.has('--quick');
const MEMORY_ONLY = ARGS.has('--memory');
for (const a of ARGS) if (a !== '--quick' && a !== '--memory') throw new Error(`bench: unknown argument ${a} (known: --quick, --memory)`);

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!(n > 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

/** A count that may be 0 (0 skips what it counts). */
function envCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!(n >= 0) || !Number.isInteger(n)) throw new Error(`${name} must be a whole number ≥ 0, got "${raw}"`);
  return n;
}

const SETTINGS = {
  latencySeconds: envNumber('BENCH_LATENCY_S', QUICK ? 2 : 5),
  saturationSeconds: envNumber('BENCH_SATURATION_S', QUICK ? 2 : 8),
  warmupSeconds: envNumber('BENCH_WARMUP_S', 1),
  connections: Math.round(envNumber('BENCH_CONNECTIONS', 32)),
  memoryRequests: envCount('BENCH_MEMORY_REQUESTS', 200_000),
  slowStreams: envCount('BENCH_SLOW_STREAMS', 5000),
  slowChunks: Math.round(envNumber('BENCH_SLOW_CHUNKS', 3000)),
  slowHoldSeconds: envNumber('BENCH_SLOW_HOLD_S', 10),
  /** Streams offered beyond the held ones, as a share of them (1 = as many again: 10,000 offered for 5,000). */
  streamExcess: envCount('BENCH_STREAM_EXCESS', 1),
  /** `serve --workers` counts the streams run is made with; each holds BENCH_SLOW_STREAMS per worker. */
  streamWorkers: (process.env.BENCH_STREAM_WORKERS ?? '1,2').split(',').map((w) => Math.round(Number(w))).filter((w) => w >= 1),
};

/** `--quick` fails when opinference's CPU per request at saturation exceeds this many times bare Node's (BENCH_QUICK_MAX_RATIO). */
const QUICK_MAX_RATIO = envNumber('BENCH_QUICK_MAX_RATIO', 6);
/** `--quick` measures each target this many times, alternating, and keeps the median (BENCH_QUICK_ROUNDS). */
const QUICK_ROUNDS = Math.round(envNumber('BENCH_QUICK_ROUNDS', 5));

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist', 'src', 'cli.js');
const GATEWAY_NODE_ARGS = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const UPSTREAM_SCRIPT = join(ROOT, 'bench', 'upstream.ts');
const STREAM_LOAD_SCRIPT = join(ROOT, 'bench', 'stream-load.ts');
const BARE_PROXY_SCRIPT = join(ROOT, 'bench', 'bare-proxy.ts');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const ADMIN_KEY = 'bench-admin-key';
const HOST = '127.0.0.1';

type TargetKind = 'direct' | 'bare' | 'nginx' | 'gateway';
const TARGET_KINDS: TargetKind[] = ['direct', 'bare', 'nginx', 'gateway'];
const TARGET_LABEL: Record<TargetKind, string> = { direct: 'direct', bare: 'bare Node', nginx: 'nginx', gateway: 'opinference' };

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, untyped): the subset used here.

interface AutocannonOptions {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration?: number;
  amount?: number;
  pipelining?: number;
  timeout?: number;
  verifyBody?: (body: string) => boolean;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  non2xx: number;
  '2xx': number;
  latency: { p50: number; p99: number; mean: number; max: number };
  requests: { average: number; total: number; sent: number };
}

interface AutocannonInstance extends EventEmitter {
  stop(): void;
}

type Autocannon = (opts: AutocannonOptions, cb: (err: Error | null, result: AutocannonResult) => void) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// ---------------------------------------------------------------------------------------------
// Child processes: every child is tracked and killed on any exit.

const children = new Set<ChildProcess>();
let tempDir: string | undefined;
let activeRun: AutocannonInstance | undefined;

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Children killed with SIGTERM even on exit: nginx's master must live to stop its worker (a SIGKILLed master leaves the worker running). */
const termOnly = new WeakSet<ChildProcess>();

function killAll(signal: NodeJS.Signals): void {
  for (const child of children) if (alive(child)) child.kill(termOnly.has(child) ? 'SIGTERM' : signal);
}

process.on('exit', () => {
  killAll('SIGKILL');
  if (tempDir && process.env.BENCH_KEEP_TEMP !== '1') rmSync(tempDir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping children\n`);
    activeRun?.stop();
    killAll('SIGTERM');
    process.exit(130);
  });
}

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Stop a child: SIGTERM, then SIGKILL after `graceMs`. */
async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (!alive(child)) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolvePort(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Start one of the bench's TypeScript servers (`upstream.ts`, `bare-proxy.ts`) and read its port from the first stdout line. */
async function startScript(script: string, args: string[] = []): Promise<{ child: ChildProcess; port: number }> {
  const name = relative(ROOT, script);
  const child = track(spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] }));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 15 s`)), 15_000);
    child.once('exit', (code, signal) => reject(new Error(`${name} exited early (${code ?? signal})`)));
    lines.once('line', (line) => {
      clearTimeout(timer);
      try {
        resolvePort((JSON.parse(line) as { port: number }).port);
      } catch {
        reject(new Error(`unexpected ${name} output: ${line}`));
      }
    });
  });
  lines.close();
  child.stdout!.resume();
  return { child, port };
}

interface Upstream {
  child: ChildProcess;
  port: number;
  /** Base URL of one behaviour: `http://127.0.0.1:PORT/<behaviour>/v1`. */
  url(behaviour: Behaviour): string;
}

async function startUpstream(): Promise<Upstream> {
  const { child, port } = await startScript(UPSTREAM_SCRIPT);
  return { child, port, url: (b) => `http://${HOST}:${port}/${b}/v1` };
}

/** A baseline proxy in front of the upstream: forwards `/<behaviour>/v1/...` untouched. */
interface Proxy {
  child: ChildProcess;
  origin: string;
}

async function startBareProxy(upstream: Upstream): Promise<Proxy> {
  const { child, port } = await startScript(BARE_PROXY_SCRIPT, [`http://${HOST}:${upstream.port}`]);
  return { child, origin: `http://${HOST}:${port}` };
}

/** nginx's executable, if installed (PATH, then the usual sbin folders). */
function findNginx(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'nginx'))) return join(dir, 'nginx');
  return ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find((p) => existsSync(p));
}

/** Soft and hard limits on open files of this process (Linux /proc; undefined elsewhere). */
function openFilesLimit(): { soft: number; hard: number } | undefined {
  try {
    const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m) return undefined;
    const n = (v: string) => (v === 'unlimited' ? Number.POSITIVE_INFINITY : Number(v));
    return { soft: n(m[1]!), hard: n(m[2]!) };
  } catch {
    return undefined;
  }
}

/**
 * nginx as a reverse proxy with keep-alive to the upstream: a private config in `dir` (one
 * worker, no daemon, no access log, pid and temp paths in `dir`), killed by the bench.
 * @see https://nginx.org/en/docs/http/ngx_http_upstream_module.html#keepalive
 */
async function startNginx(bin: string, dir: string, upstream: Upstream): Promise<Proxy> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const nofile = Math.min(65_536, openFilesLimit()?.hard ?? 65_536);
  const conf = `daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile ${nofile};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections ${Math.max(1024, nofile - 64)}; }
http {
  access_log off;
  client_body_temp_path ${join(dir, 'client_body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  client_max_body_size 16m;
  client_body_buffer_size 64k;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  upstream bench_upstream {
    server ${HOST}:${upstream.port};
    keepalive 256;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }
  server {
    listen ${HOST}:${port} backlog=4096;
    location / {
      proxy_pass http://bench_upstream;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`;
  const confFile = join(dir, 'nginx.conf');
  writeFileSync(confFile, conf);
  const child = track(spawn(bin, ['-p', `${dir}/`, '-c', confFile, '-e', join(dir, 'error.log')], { stdio: 'ignore' }));
  termOnly.add(child);
  const origin = `http://${HOST}:${port}`;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (!alive(child)) throw new Error(`nginx exited during start-up; its log:\n${tail(join(dir, 'error.log'))}`);
    try {
      await (await fetch(`${origin}/`)).text(); // any answer (the upstream's 404) means it listens
      return { child, origin };
    } catch {
      await sleep(50);
    }
  }
  throw new Error(`nginx not answering within 10 s; its log:\n${tail(join(dir, 'error.log'))}`);
}

interface GatewayProcess {
  child: ChildProcess;
  origin: string;
  logFile: string;
  dbFile: string;
  /** Secret of the key the load uses (made by `keys create`, with limits). */
  key: string;
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function kindOf(s: Scenario): 'openai' | 'anthropic' {
  return s.kind ?? 'openai';
}

function providerId(kind: 'openai' | 'anthropic', b: Behaviour): string {
  return kind === 'anthropic' ? `anth-${b}` : `up-${b}`;
}

function gatewayConfig(upstream: Upstream, scenarios: Scenario[], server?: Record<string, unknown>): unknown {
  const providers = new Map<string, unknown>();
  for (const s of scenarios) {
    for (const b of s.endpoints) {
      const id = providerId(kindOf(s), b);
      // The slow streams hold thousands of upstream connections at once.
      providers.set(id, { id, kind: kindOf(s), base_url: upstream.url(b), ...(b === 'slow' ? { max_connections: 100_000 } : {}) });
    }
  }
  return {
    ...(server ? { server } : {}),
    // The failover scenarios must fail over on every request: the breaker counts failures but
    // never opens. Health samples, ordering and the breaker's bookkeeping still run.
    routing: { circuit_breaker: { failure_threshold: 1_000_000_000 }, recent_failure_ms: 0 },
    providers: [...providers.values()],
    models: scenarios.map((s) => ({
      id: `bench/${s.id}`,
      context_length: 8192,
      endpoints: s.endpoints.map((b) => ({ provider: providerId(kindOf(s), b), upstream_model: 'm', pricing: { prompt: 1, completion: 2 }, supported_parameters: SUPPORTED_PARAMETERS })),
    })),
  };
}

/** What every bench endpoint accepts (the tool scenarios need `tools`; the slow streams `max_tokens`). */
const SUPPORTED_PARAMETERS = ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls'];

/** Key limits: real limits, high enough never to refuse a benchmark request. */
const KEY_FLAGS = ['--limit', '1000000', '--limit-reset', 'monthly', '--rpm', '1000000000', '--tpm', '1000000000000'];

/** Start the built gateway on a free port with a temp config and SQLite file and a key made by `keys create`; wait for /health. */
async function startGateway(dir: string, upstream: Upstream, scenarios: Scenario[], serveArgs: string[] = [], extraEnv: Record<string, string> = {}, server?: Record<string, unknown>): Promise<GatewayProcess> {
  const configFile = join(dir, 'opinference.yaml');
  writeFileSync(configFile, toYaml(gatewayConfig(upstream, scenarios, server)));
  const dbFile = join(dir, 'bench.db');
  const logFile = join(dir, 'gateway.log');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OP_CONFIG: configFile,
    OP_PORT: String(port),
    OP_HOST: HOST,
    OP_DATABASE_URL: `sqlite:${dbFile}`,
    OP_ADMIN_KEY: ADMIN_KEY,
    OP_LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    ...extraEnv,
  };
  const made = spawnSync(process.execPath, [CLI, 'keys', 'create', '--name', 'bench', ...KEY_FLAGS], { cwd: dir, env, encoding: 'utf8' });
  const key = made.stdout?.trim() ?? '';
  if (made.status !== 0 || !key) throw new Error(`opinference keys create failed (${made.status ?? made.signal}): ${made.stderr}`);
  const logFd = openSync(logFile, 'a');
  const child = track(spawn(process.execPath, [...GATEWAY_NODE_ARGS, CLI, 'serve', ...serveArgs], { cwd: dir, stdio: ['ignore', logFd, logFd], env }));
  closeSync(logFd);
  const origin = `http://${HOST}:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (!alive(child)) throw new Error(`gateway exited during start-up; its log:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${origin}/health`);
      if (res.ok) return { child, origin, logFile, dbFile, key };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`gateway not healthy within 20 s; its log:\n${tail(logFile)}`);
}

// ---------------------------------------------------------------------------------------------
// Requests and targets

interface Target {
  kind: TargetKind;
  url: string;
  headers: Record<string, string>;
  body: string;
  verify: (body: string) => boolean;
  /** Root of the proxy's process tree (its CPU is this target's cost); none for direct. */
  proxyPid: number | undefined;
}

function requestBody(s: Scenario): Record<string, unknown> {
  return { model: `bench/${s.id}`, messages: [{ role: 'user', content: s.prompt ?? 'hi' }], stream: s.stream, ...s.extraBody };
}

function chatVerifier(s: Scenario): (body: string) => boolean {
  const tools = s.extraBody?.tools !== undefined;
  if (s.stream) return (b) => b.includes('"usage"') && b.trimEnd().endsWith('data: [DONE]') && (!tools || b.includes('"tool_calls"'));
  return (b) => b.includes('"chat.completion"') && b.includes('"usage"') && (!tools || b.includes('"tool_calls"'));
}

function messagesVerifier(s: Scenario): (body: string) => boolean {
  if (s.stream) return (b) => b.includes('event: message_delta') && b.trimEnd().endsWith('data: {"type":"message_stop"}');
  return (b) => b.includes('"type":"message"') && b.includes('"usage"');
}

/** The request the baselines send straight to the upstream's native API (path under an origin, body, check). */
function nativeRequest(s: Scenario): { path: string; body: string; verify: (body: string) => boolean } {
  const direct = s.direct ?? s.endpoints[s.endpoints.length - 1]!;
  if (kindOf(s) === 'anthropic') {
    const body = { model: 'm', max_tokens: 1024, messages: [{ role: 'user', content: s.prompt ?? 'hi' }], stream: s.stream };
    return { path: `/${direct}/v1/messages`, body: JSON.stringify(body), verify: messagesVerifier(s) };
  }
  return { path: `/${direct}/v1/chat/completions`, body: JSON.stringify(requestBody(s)), verify: chatVerifier(s) };
}

interface Stack {
  upstream: Upstream;
  bare: Proxy | undefined;
  nginx: Proxy | undefined;
  gateway: GatewayProcess;
}

function makeTarget(kind: TargetKind, s: Scenario, stack: Stack): Target | undefined {
  const json = { 'content-type': 'application/json' };
  if (kind === 'gateway') {
    const gw = stack.gateway;
    return { kind, url: `${gw.origin}/v1/chat/completions`, headers: { ...json, authorization: `Bearer ${gw.key}` }, body: JSON.stringify(requestBody(s)), verify: chatVerifier(s), proxyPid: gw.child.pid };
  }
  const native = nativeRequest(s);
  const headers = kindOf(s) === 'anthropic' ? { ...json, 'anthropic-version': '2023-06-01' } : json;
  if (kind === 'direct') return { kind, url: `http://${HOST}:${stack.upstream.port}${native.path}`, headers, body: native.body, verify: native.verify, proxyPid: undefined };
  const proxy = kind === 'bare' ? stack.bare : stack.nginx;
  if (!proxy) return undefined;
  return { kind, url: `${proxy.origin}${native.path}`, headers, body: native.body, verify: native.verify, proxyPid: proxy.child.pid };
}

/** One request with fetch; throws with the body when the answer is wrong. */
async function sanityCheck(s: Scenario, t: Target): Promise<void> {
  const res = await fetch(t.url, { method: 'POST', headers: t.headers, body: t.body });
  const text = await res.text();
  if (res.status !== 200 || !t.verify(text)) {
    throw new Error(`${s.id} ${t.kind}: unexpected answer ${res.status}: ${text.slice(0, 500)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Load generators

/** One measured run, whichever load generator made it. */
interface Run {
  /** `autocannon` or `wrk`. */
  loadgen: string;
  /** 2xx responses (with a checked body, for autocannon). */
  ok: number;
  /** Responses or attempts that failed: not 2xx, socket errors, timeouts, wrong bodies (autocannon only). */
  bad: number;
  /** Measured duration, in s. */
  seconds: number;
  /** 2xx responses per second. */
  rps: number;
  /** 2xx response times in ms at full precision (autocannon; its histogram keeps whole ms only). */
  latencies?: number[];
  /** p50/p99 in ms from the load generator's own histogram (wrk: µs precision). */
  p50: number;
  p99: number;
  mean: number;
  cpu?: CpuSample;
}

function autocannonRun(t: Target, connections: number, seconds: number, amount?: number, onResponse?: (n: number) => void): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const latencies: number[] = [];
    let responses = 0;
    const instance = autocannon(
      { url: t.url, method: 'POST', headers: t.headers, body: t.body, connections, ...(amount ? { amount } : { duration: seconds }), pipelining: 1, timeout: 10, verifyBody: t.verify },
      (err, result) => {
        activeRun = undefined;
        if (err) return reject(err);
        const ok = result['2xx'] - result.mismatches;
        resolveRun({
          loadgen: 'autocannon',
          ok,
          bad: result.non2xx + result.errors + result.timeouts + result.mismatches,
          seconds: result.duration,
          rps: ok / result.duration,
          latencies,
          p50: result.latency.p50,
          p99: result.latency.p99,
          mean: result.latency.mean,
        });
      },
    );
    activeRun = instance;
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms);
      onResponse?.(++responses);
    });
  });
}

if (process.env.BENCH_LOADGEN && !['wrk', 'autocannon'].includes(process.env.BENCH_LOADGEN)) throw new Error(`BENCH_LOADGEN must be wrk or autocannon, got "${process.env.BENCH_LOADGEN}"`);
const WRK = process.env.BENCH_LOADGEN === 'autocannon' ? undefined : (() => {
  for (const dir of (process.env.PATH ?? '').split(':')) if (dir && existsSync(join(dir, 'wrk'))) return join(dir, 'wrk');
  return undefined;
})();
if (process.env.BENCH_LOADGEN === 'wrk' && !WRK) throw new Error('BENCH_LOADGEN=wrk but no wrk on PATH (Debian: apt-get install wrk)');

/** Lua string literal. */
function luaString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

let wrkScripts = 0;

/**
 * A wrk run (one thread, `connections` keep-alive connections): POST body and headers from a Lua
 * script; the counts and µs percentiles come back from its `done` hook. wrk counts non-2xx/3xx
 * answers as status errors; it does not check bodies (the sanity check and the c=1 autocannon
 * run do).
 * @see https://github.com/wg/wrk/blob/master/SCRIPTING
 */
async function wrkRun(t: Target, connections: number, seconds: number): Promise<Run> {
  const dir = join(tempDir!, 'wrk');
  mkdirSync(dir, { recursive: true });
  const n = ++wrkScripts;
  const bodyFile = join(dir, `body${n}.json`);
  writeFileSync(bodyFile, t.body);
  const script = [
    `local f = assert(io.open(${luaString(bodyFile)}, "rb"))`,
    'wrk.method = "POST"',
    'wrk.body = f:read("*a")',
    'f:close()',
    ...Object.entries(t.headers).map(([k, v]) => `wrk.headers[${luaString(k)}] = ${luaString(v)}`),
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("BENCH-WRK %d %d %d %d %d %d %d %d %d %.3f\\n", summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(99), latency.mean))',
    'end',
  ].join('\n');
  const scriptFile = join(dir, `script${n}.lua`);
  writeFileSync(scriptFile, script);
  const child = track(spawn(WRK!, ['-t1', `-c${connections}`, `-d${Math.max(1, Math.round(seconds))}s`, '--timeout', '10s', '-s', scriptFile, t.url], { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  const line = out.split('\n').find((l) => l.startsWith('BENCH-WRK '));
  if (code !== 0 || !line) throw new Error(`wrk failed (${code}): ${out.slice(-1000)}`);
  const [requests, durationUs, connect, read, write, status, timeout, p50, p99, mean] = line.split(' ').slice(1).map(Number) as number[];
  const s = durationUs! / 1e6;
  const ok = requests! - status!;
  return { loadgen: 'wrk', ok, bad: status! + connect! + read! + write! + timeout!, seconds: s, rps: ok / s, p50: p50! / 1000, p99: p99! / 1000, mean: mean! / 1000 };
}

/** The saturation run: wrk when installed (and not BENCH_LOADGEN=autocannon), else autocannon. */
function saturationRun(t: Target, connections: number, seconds: number): Promise<Run> {
  return WRK ? wrkRun(t, connections, seconds) : autocannonRun(t, connections, seconds);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

// ---------------------------------------------------------------------------------------------
// CPU and memory from /proc (Linux; undefined elsewhere)

const CLOCK_TICK = 100; // USER_HZ on Linux

function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds used so far by one process (utime+stime); with `reaped`, plus its waited-for children's (cutime+cstime). */
function cpuSeconds(pid: number | 'self', reaped = false): number | undefined {
  const f = statFields(pid);
  if (!f) return undefined;
  // After "pid (comm) ": [0] state, [1] ppid, ... [11] utime, [12] stime, [13] cutime, [14] cstime.
  const own = Number(f[11]) + Number(f[12]);
  return (reaped ? own + Number(f[13]) + Number(f[14]) : own) / CLOCK_TICK;
}

/** A process and all its descendants (nginx's workers, `serve --workers`' workers). */
function processTree(root: number | undefined): number[] {
  if (root === undefined) return [];
  const parent = new Map<number, number>();
  try {
    for (const name of readdirSync('/proc')) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const f = statFields(pid);
      if (f) parent.set(pid, Number(f[1]));
    }
  } catch {
    return [root];
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parent) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

function treeCpu(tree: number[]): number | undefined {
  if (tree.length === 0) return undefined;
  let sum = 0;
  for (const pid of tree) {
    const s = cpuSeconds(pid);
    if (s === undefined) return undefined;
    sum += s;
  }
  return sum;
}

/** Current (`VmRSS`) or peak (`VmHWM`) resident memory of a process, in bytes. */
function rssBytes(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU time of the whole machine so far, in clock ticks (Linux /proc/stat). */
function systemTicks(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    // user nice system idle iowait irq softirq steal
    return { busy: total - f[3]! - f[4]!, total };
  } catch {
    return undefined;
  }
}

/** CPUs busy (1.0 = one full CPU) on the whole machine between two samples. */
function busyCpus(a: ReturnType<typeof systemTicks>, b: ReturnType<typeof systemTicks>): number | undefined {
  if (!a || !b || b.total === a.total) return undefined;
  return ((b.busy - a.busy) / (b.total - a.total)) * os.cpus().length;
}

/** CPU seconds used during one run: per role, and by everything else on the machine. */
interface CpuSample {
  wall: number;
  /** The bench process (autocannon) plus any load generator child it waited for (wrk). */
  loadgen: number | undefined;
  upstream: number | undefined;
  /** The target's proxy process tree; undefined for direct. */
  proxy: number | undefined;
  /** Processes other than these (other work on the machine, idle proxies, kernel work not charged to them), in CPUs. */
  otherCpus: number | undefined;
}

/** Processes the bench started, for the CPU accounting of a run. */
interface Watched {
  upstream: number | undefined;
  /** Every proxy and gateway (idle ones are not "other work"). */
  all: (number | undefined)[];
}

async function measureCpu<T>(watched: Watched, proxyPid: number | undefined, fn: () => Promise<T>): Promise<{ value: T; cpu: CpuSample }> {
  const proxyTree = processTree(proxyPid);
  const allTree = [...new Set([...watched.all.flatMap((p) => processTree(p)), ...processTree(watched.upstream)])];
  const t0 = performance.now();
  const sys0 = systemTicks();
  const self0 = cpuSeconds('self', true);
  const up0 = cpuSeconds(watched.upstream ?? -1);
  const px0 = treeCpu(proxyTree);
  const all0 = treeCpu(allTree);
  const value = await fn();
  const wall = (performance.now() - t0) / 1000;
  const self1 = cpuSeconds('self', true);
  const up1 = cpuSeconds(watched.upstream ?? -1);
  const px1 = treeCpu(proxyTree);
  const all1 = treeCpu(allTree);
  const sys = busyCpus(sys0, systemTicks());
  const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a);
  const loadgen = diff(self0, self1);
  const cpu: CpuSample = { wall, loadgen, upstream: diff(up0, up1), proxy: diff(px0, px1), otherCpus: undefined };
  const known = (loadgen ?? 0) + (diff(all0, all1) ?? 0);
  if (sys !== undefined) cpu.otherCpus = Math.max(0, sys - known / wall);
  return { value, cpu };
}

/** CPUs busy on the machine over `ms` before the benchmark starts anything. */
async function backgroundLoad(ms = 1000): Promise<number | undefined> {
  const a = systemTicks();
  await sleep(ms);
  return busyCpus(a, systemTicks());
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface TargetResult {
  /** c=1 (absent in --quick). */
  latency?: Run;
  /** c=BENCH_CONNECTIONS. */
  saturation: Run;
}

interface ScenarioResult {
  scenario: Scenario;
  runs: Partial<Record<TargetKind, TargetResult>>;
}

async function measureTarget(s: Scenario, t: Target, watched: Watched, withLatency = true): Promise<TargetResult> {
  const label = `${s.id} / ${TARGET_LABEL[t.kind]}`;
  let latency: Run | undefined;
  if (withLatency) {
    process.stderr.write(`bench: ${label}: warm-up, latency (1 connection, ${SETTINGS.latencySeconds} s)…\n`);
    await autocannonRun(t, 4, SETTINGS.warmupSeconds);
    const low = await measureCpu(watched, t.proxyPid, () => autocannonRun(t, 1, SETTINGS.latencySeconds));
    latency = { ...low.value, cpu: low.cpu };
  }
  process.stderr.write(`bench: ${label}: saturation (${SETTINGS.connections} connections, ${SETTINGS.saturationSeconds} s)…\n`);
  await saturationRun(t, SETTINGS.connections, SETTINGS.warmupSeconds);
  const high = await measureCpu(watched, t.proxyPid, () => saturationRun(t, SETTINGS.connections, SETTINGS.saturationSeconds));
  return { latency, saturation: { ...high.value, cpu: high.cpu } };
}

/** Proxy CPU µs per 2xx response of a run (NaN for direct or when /proc is unavailable). */
function cpuUs(run: Run | undefined): number {
  if (!run?.cpu || run.cpu.proxy === undefined || run.ok <= 0) return Number.NaN;
  return (run.cpu.proxy * 1e6) / run.ok;
}

function latencyPair(run: Run | undefined): { p50: number; p99: number } {
  if (!run) return { p50: Number.NaN, p99: Number.NaN };
  if (!run.latencies) return { p50: run.p50, p99: run.p99 };
  const sorted = [...run.latencies].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

// ---------------------------------------------------------------------------------------------
// Memory: RSS after many requests; many slow streams with /health latency meanwhile

interface RssAfterRequests {
  requests: number;
  ok: number;
  bad: number;
  seconds: number;
  /** VmRSS in bytes after each tenth of the requests. */
  series: { after: number; rss: number | undefined }[];
  final: number | undefined;
  peak: number | undefined;
  /** VmRSS in bytes of the fresh gateway before the first request. */
  idle: number | undefined;
  /** The gateway's CPU (utime+stime) per 2xx response over the run, in µs. */
  cpuUsPerRequest: number | undefined;
}

async function rssAfterRequests(stack: Stack, requests: number): Promise<RssAfterRequests> {
  const t = makeTarget('gateway', SCENARIOS[0]!, stack)!;
  const pid = stack.gateway.child.pid;
  const series: RssAfterRequests['series'] = [];
  const step = Math.max(1, Math.floor(requests / 10));
  process.stderr.write(`bench: memory: ${requests.toLocaleString('en-US')} non-streaming requests through a fresh gateway (${SETTINGS.connections} connections)…\n`);
  const idle = rssBytes(pid);
  const cpuBefore = pid === undefined ? undefined : cpuSeconds(pid);
  const run = await autocannonRun(t, SETTINGS.connections, 0, requests, (n) => {
    if (n % step === 0) series.push({ after: n, rss: rssBytes(pid) });
  });
  const cpuAfter = pid === undefined ? undefined : cpuSeconds(pid);
  if (process.env.BENCH_HEAP_SNAPSHOT === '1' && pid !== undefined) {
    // The gateway runs with --heapsnapshot-signal=SIGUSR2 (BENCH_GATEWAY_NODE_ARGS); it writes
    // the snapshot into its folder (kept with BENCH_KEEP_TEMP=1) while the bench waits.
    process.kill(pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 15_000));
  }
  const cpuUsPerRequest = cpuBefore !== undefined && cpuAfter !== undefined && run.ok > 0 ? ((cpuAfter - cpuBefore) * 1e6) / run.ok : undefined;
  return { requests, ok: run.ok, bad: run.bad, seconds: run.seconds, series, final: rssBytes(pid), peak: rssBytes(pid, 'VmHWM'), idle, cpuUsPerRequest };
}

/** Streams opened by one phase, as the load generators answered it (summed over them). */
interface OpenSummary {
  ok: number;
  ttfbMs: number[];
  connectMs: number[];
  headMs: number[];
  refused: OpenResult['refused'];
  failed: OpenResult['failed'];
  elapsedMs: number;
}

interface SlowStreamsResult {
  /** Streams held by the gateway (all processes), and streams offered beyond them. */
  streams: number;
  excessOffered: number;
  workers: number;
  chunks: number;
  /** The same streams straight to the upstream: the time-to-first-byte baseline. */
  direct: OpenSummary | undefined;
  /** The same streams through the bare Node proxy: opened, receiving while held, CPUs it used while held. */
  bare: { opened: OpenSummary; live: number; cpus: number | undefined } | undefined;
  opened: OpenSummary;
  /** Held streams that received data in the hold window, and the ones that ended or failed. */
  heldLive: LiveResult;
  excess: OpenSummary | undefined;
  /** Held streams that received data while the excess was offered. */
  excessLive: LiveResult | undefined;
  /** /health response times in ms, by phase. */
  health: number[];
  healthOpening: number[];
  healthExcess: number[];
  healthWindowS: number;
  /** Gateway RSS (all its processes) before the streams, once all were held, and the peak, in bytes. */
  rssIdle: number | undefined;
  rssHeld: number | undefined;
  rssPeak: number | undefined;
  /** Gateway CPUs used during the hold window. */
  gatewayCpus: number | undefined;
}

/** Streams each load-generator process opens at most (open-files limit per process). */
const STREAMS_PER_LOADGEN = 8000;
/** Streams waiting for their response head at a time, per load generator. */
const OPENING = 100;
/** Longest time given to one phase's streams to open, in ms; the rest count as failed. */
const OPEN_DEADLINE_MS = 120_000;

/** Load-generator child processes (bench/stream-load.ts) answering commands over IPC. */
class StreamLoad {
  private nextId = 1;
  private readonly waiting = new Map<number, (m: unknown) => void>();
  private constructor(private readonly child: ChildProcess) {
    child.on('message', (m: { id?: number }) => {
      if (m.id === undefined) return;
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
    });
  }

  static async start(): Promise<StreamLoad> {
    const child = track(spawn(process.execPath, ['--import', 'tsx', STREAM_LOAD_SCRIPT], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
    await new Promise<void>((ready, reject) => {
      child.once('message', () => ready());
      child.once('exit', (code, signal) => reject(new Error(`bench/stream-load.ts exited early (${code ?? signal})`)));
    });
    return new StreamLoad(child);
  }

  ask<T>(command: Record<string, unknown> & { cmd: LoadCommand['cmd'] }): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((answer) => {
      this.waiting.set(id, answer as (m: unknown) => void);
      this.child.send({ ...command, id });
    });
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** Open `count` streams spread over the load generators and sum their answers. */
async function openStreams(loads: StreamLoad[], count: number, url: string, headers: Record<string, string>, body: string): Promise<OpenSummary> {
  const share = (i: number) => Math.floor(count / loads.length) + (i < count % loads.length ? 1 : 0);
  const parts = await Promise.all(loads.map((l, i) => l.ask<OpenResult>({ cmd: 'open', url, headers, body, count: share(i), pending: OPENING, deadlineMs: OPEN_DEADLINE_MS })));
  const failed = new Map<string, number>();
  for (const p of parts) for (const f of p.failed) failed.set(f.message, (failed.get(f.message) ?? 0) + f.count);
  return {
    ok: parts.reduce((a, p) => a + p.ok, 0),
    ttfbMs: parts.flatMap((p) => p.ttfbMs),
    connectMs: parts.flatMap((p) => p.connectMs),
    headMs: parts.flatMap((p) => p.headMs),
    refused: parts.flatMap((p) => p.refused),
    failed: [...failed].map(([message, n]) => ({ message, count: n })),
    elapsedMs: Math.max(...parts.map((p) => p.elapsedMs)),
  };
}

async function liveStreams(loads: StreamLoad[]): Promise<LiveResult> {
  const parts = await Promise.all(loads.map((l) => l.ask<LiveResult>({ cmd: 'live' })));
  return { id: 0, live: parts.reduce((a, p) => a + p.live, 0), open: parts.reduce((a, p) => a + p.open, 0), ended: parts.reduce((a, p) => a + p.ended, 0), firstEnd: parts.find((p) => p.firstEnd)?.firstEnd };
}

function treeRss(root: number | undefined): number | undefined {
  const tree = processTree(root);
  if (tree.length === 0) return undefined;
  let sum = 0;
  for (const pid of tree) sum += rssBytes(pid) ?? 0;
  return sum;
}

/**
 * Streams at scale (issue #21 item 5). `n` slow streams (one chunk per 100 ms, up to `chunks`)
 * are first opened straight to the upstream (the time-to-first-byte baseline) and closed; then,
 * against a fresh gateway (`serve --workers <workers>`, `server.overload.max_streams` = n per
 * process), opened by load-generator child processes at most OPENING pending at a time each,
 * held `holdSeconds` while `GET /health` is probed back to back (10 ms apart, from this process,
 * which holds no stream), then `excess` more are offered while the n are held (each should be
 * refused at once with 503 `gateway_overloaded`), then all are closed by the client. The
 * gateway's RSS (all its processes) is sampled every 250 ms.
 */
async function slowStreams(dir: string, upstream: Upstream, n: number, excess: number, workers: number, chunks: number, holdSeconds: number): Promise<SlowStreamsResult> {
  const body = JSON.stringify({ ...requestBody(SLOW_SCENARIO), max_tokens: chunks });
  const loads = await Promise.all(Array.from({ length: Math.max(1, Math.ceil((n + excess) / STREAMS_PER_LOADGEN)) }, () => StreamLoad.start()));
  process.stderr.write(`bench: streams: ${fmtInt(n)} slow streams straight to the upstream (the baseline)…\n`);
  const direct = await openStreams(loads, n, `${upstream.url('slow')}/chat/completions`, { 'content-type': 'application/json' }, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: chunks }));
  await Promise.all(loads.map((l) => l.ask({ cmd: 'close' })));
  await sleep(1000);
  // The same streams through the bare Node proxy, held as long: its CPU per relayed chunk is the floor.
  process.stderr.write(`bench: streams: ${fmtInt(n)} slow streams through the bare Node proxy…\n`);
  const bare = await startBareProxy(upstream);
  const viaBare = await openStreams(loads, n, `${bare.origin}/slow/v1/chat/completions`, { 'content-type': 'application/json' }, JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: chunks }));
  const b0 = cpuSeconds(bare.child.pid ?? -1);
  const bt0 = performance.now();
  await sleep(holdSeconds * 1000);
  const b1 = cpuSeconds(bare.child.pid ?? -1);
  const bareCpus = b0 !== undefined && b1 !== undefined ? (b1 - b0) / ((performance.now() - bt0) / 1000) : undefined;
  const bareLive = await liveStreams(loads);
  await Promise.all(loads.map((l) => l.ask({ cmd: 'close' })));
  await stopChild(bare.child);
  await sleep(1000);

  const env: Record<string, string> = workers > 1 ? { OP_REDIS_URL: process.env.OP_REDIS_URL || 'redis://127.0.0.1:6379', OP_REDIS_PREFIX: `op-bench:${process.pid}:streams:` } : {};
  const gw = await startGateway(dir, upstream, [SLOW_SCENARIO], workers > 1 ? ['--workers', String(workers)] : [], env, { overload: { max_streams: Math.ceil(n / workers) } });
  if (workers > 1) await sleep(2000); // every worker listening
  const pid = gw.child.pid;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` };
  const url = `${gw.origin}/v1/chat/completions`;
  // Warm-up: a few streams opened and closed, so the idle RSS includes what the first requests load.
  await openStreams(loads, Math.min(100, n), url, headers, body);
  await Promise.all(loads.map((l) => l.ask({ cmd: 'close' })));
  await sleep(2000);
  const rssIdle = treeRss(pid);
  let rssPeak = 0;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, treeRss(pid) ?? 0)), 250);
  const state: { phase: 'opening' | 'held' | 'excess' | 'done' } = { phase: 'opening' };
  const health: Record<'opening' | 'held' | 'excess', number[]> = { opening: [], held: [], excess: [] };
  const prober = (async () => {
    while (state.phase !== 'done') {
      const p = state.phase;
      const s = performance.now();
      try {
        const res = await fetch(`${gw.origin}/health`);
        await res.arrayBuffer();
        if (res.ok && state.phase === p) health[p].push(performance.now() - s);
      } catch {
        // counted as a missing probe
      }
      await sleep(10);
    }
  })();
  process.stderr.write(`bench: streams: ${fmtInt(n)} slow streams through the gateway (--workers ${workers})…\n`);
  const opened = await openStreams(loads, n, url, headers, body);
  await Promise.all(loads.map((l) => l.ask({ cmd: 'mark' })));
  const cpu0 = treeCpu(processTree(pid));
  const h0 = performance.now();
  state.phase = 'held';
  await sleep(holdSeconds * 1000);
  const healthWindowS = (performance.now() - h0) / 1000;
  const cpu1 = treeCpu(processTree(pid));
  const rssHeld = treeRss(pid);
  const heldLive = await liveStreams(loads);
  let excessResult: OpenSummary | undefined;
  let excessLive: LiveResult | undefined;
  if (excess > 0) {
    process.stderr.write(`bench: streams: ${fmtInt(excess)} more offered while they are held…\n`);
    await Promise.all(loads.map((l) => l.ask({ cmd: 'mark' })));
    state.phase = 'excess';
    const e0 = performance.now();
    excessResult = await openStreams(loads, excess, url, headers, body);
    await sleep(Math.max(0, 1000 - (performance.now() - e0))); // every held stream had at least 1 s to receive a chunk
    excessLive = await liveStreams(loads);
  }
  state.phase = 'done';
  await prober;
  clearInterval(sampler);
  await Promise.all(loads.map((l) => l.ask({ cmd: 'close' })));
  await Promise.all(loads.map((l) => l.stop()));
  await sleep(1000); // the gateway sees the disconnects
  await stopChild(gw.child);
  return {
    streams: n,
    excessOffered: excess,
    workers,
    chunks,
    direct,
    bare: { opened: viaBare, live: bareLive.live, cpus: bareCpus },
    opened,
    heldLive,
    excess: excessResult,
    excessLive,
    health: health.held,
    healthOpening: health.opening,
    healthExcess: health.excess,
    healthWindowS,
    rssIdle,
    rssHeld,
    rssPeak: rssPeak || undefined,
    gatewayCpus: cpu0 !== undefined && cpu1 !== undefined ? (cpu1 - cpu0) / healthWindowS : undefined,
  };
}

/** File descriptors the slow-streams test needs in one process: a gateway process holds a client and an upstream socket per stream it holds, the upstream one per stream. */
function slowStreamsFds(n: number, workers: number): number {
  return Math.max(2 * Math.ceil(n / workers), n) + 1024;
}

interface MemoryResult {
  rss?: RssAfterRequests;
  /** One run per `--workers` count (BENCH_STREAM_WORKERS). */
  slow: SlowStreamsResult[];
  /** Why slow-stream runs were not made. */
  slowSkipped: string[];
}

async function memorySection(dir: string, upstream: Upstream, requests: number, streams: number): Promise<MemoryResult> {
  const out: MemoryResult = { slow: [], slowSkipped: [] };
  if (requests > 0) {
    const d = join(dir, 'memory-requests');
    mkdirSync(d);
    const gateway = await startGateway(d, upstream, [SCENARIOS[0]!]);
    out.rss = await rssAfterRequests({ upstream, bare: undefined, nginx: undefined, gateway }, requests);
    await stopChild(gateway.child);
  }
  if (streams > 0) {
    for (const workers of SETTINGS.streamWorkers) {
      const n = streams * workers;
      const limit = openFilesLimit();
      if (limit && limit.soft < slowStreamsFds(n, workers)) {
        out.slowSkipped.push(`--workers ${workers}: open-files limit ${limit.hard} (Node raises its soft limit to the hard one; children inherit it) is below the ${slowStreamsFds(n, workers)} the test needs: raise it (\`ulimit -Hn ${slowStreamsFds(n, workers)}\` as root, or LimitNOFILE / nofile in limits.conf) and run the bench again`);
        continue;
      }
      const d = join(dir, `streams-w${workers}`);
      mkdirSync(d);
      out.slow.push(await slowStreams(d, upstream, n, Math.round(n * SETTINGS.streamExcess), workers, SETTINGS.slowChunks, SETTINGS.slowHoldSeconds));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

function fmtMs(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  return n.toFixed(2);
}

function fmtSigned(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  return `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(2)}`;
}

function fmtInt(n: number): string {
  if (!Number.isFinite(n)) return 'n/a';
  return Math.round(n).toLocaleString('en-US');
}

function fmtRatio(n: number): string {
  return Number.isFinite(n) ? `${n.toFixed(2)}×` : 'n/a';
}

function fmtMB(bytes: number | undefined): string {
  return bytes === undefined ? 'n/a' : `${(bytes / 1e6).toFixed(0)} MB`;
}

function fmtCpus(n: number | undefined): string {
  return n === undefined ? 'n/a' : n.toFixed(2);
}

function machine(): string[] {
  const cpus = os.cpus();
  const models = [...new Set(cpus.map((c) => c.model.trim()))].join(', ') || 'unknown CPU';
  const gib = (os.totalmem() / 1024 ** 3).toFixed(1);
  return [
    `- CPU: ${models}, ${cpus.length} logical CPUs (os.availableParallelism() = ${os.availableParallelism()})`,
    `- Memory: ${gib} GiB`,
    `- OS: ${os.type()} ${os.release()} (${os.arch()})`,
    `- Node.js: ${process.version}`,
  ];
}

/** Everything the report needs besides the measurements. */
interface RunInfo {
  started: Date;
  elapsedS: number;
  /** CPUs busy on the machine just before the run (other work), if known. */
  background: number | undefined;
  records: string;
  metrics: string;
  gatewayRss: number | undefined;
  gatewayRssPeak: number | undefined;
  nginx: string;
  memory: MemoryResult | undefined;
}

/** "Other" CPU use during a run from which its numbers are marked as contended. */
const CONTENDED_CPUS = 0.3;

/** One aim of issue #12 and the figure measured for it. */
interface Aim {
  what: string;
  value: number;
  shown: string;
  limit: string;
  ok: boolean;
}

function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN;
}

function aims(results: ScenarioResult[], memory: MemoryResult | undefined): Aim[] {
  const by = new Map(results.map((r) => [r.scenario.id, r]));
  const out: Aim[] = [];
  const push = (what: string, value: number, shown: string, limit: string, max: number) => {
    if (Number.isFinite(value)) out.push({ what, value, shown, limit, ok: value <= max });
  };
  for (const id of ['chat', 'chat-stream']) {
    const r = by.get(id);
    if (!r) continue;
    const label = id === 'chat' ? 'non-streaming' : 'streaming';
    const c32 = ratio(cpuUs(r.runs.gateway?.saturation), cpuUs(r.runs.bare?.saturation));
    push(`CPU per request at c=${SETTINGS.connections}, opinference / bare Node, ${label}`, c32, fmtRatio(c32), '≤ 2.0×', 2.0);
    const c1 = ratio(cpuUs(r.runs.gateway?.latency), cpuUs(r.runs.bare?.latency));
    push(`CPU per request at c=1, opinference / bare Node, ${label}`, c1, fmtRatio(c1), '≤ 2.5×', 2.5);
    const d = latencyPair(r.runs.direct?.latency);
    const g = latencyPair(r.runs.gateway?.latency);
    push(`added p50 at c=1 over direct, ${label}`, g.p50 - d.p50, `${fmtSigned(g.p50 - d.p50)} ms`, '≤ 0.15 ms', 0.15);
    push(`added p99 at c=1 over direct, ${label}`, g.p99 - d.p99, `${fmtSigned(g.p99 - d.p99)} ms`, '≤ 1 ms', 1);
  }
  const pair = (a: string, b: string, what: string, limit: string, max: number) => {
    const ra = by.get(a);
    const rb = by.get(b);
    if (!ra || !rb) return;
    const v = ratio(cpuUs(ra.runs.gateway?.saturation), cpuUs(rb.runs.gateway?.saturation));
    push(what, v, `${fmtRatio(v)} (${fmtInt(cpuUs(ra.runs.gateway?.saturation))} / ${fmtInt(cpuUs(rb.runs.gateway?.saturation))} µs)`, limit, max);
  };
  // CPU per relayed chunk: the 200-chunk stream less the 20-chunk one, over the 180 chunks between them.
  const s20 = by.get('chat-stream');
  const s200 = by.get('chat-stream-200');
  if (s20 && s200) {
    const perChunk = (kind: 'gateway' | 'bare') => (cpuUs(s200.runs[kind]?.saturation) - cpuUs(s20.runs[kind]?.saturation)) / 180;
    const g = perChunk('gateway');
    const b = perChunk('bare');
    const v = ratio(g, b);
    push(`CPU per relayed chunk at c=${SETTINGS.connections} ((200-chunk − 20-chunk stream) / 180), opinference / bare Node`, v, `${fmtRatio(v)} (${g.toFixed(2)} / ${b.toFixed(2)} µs)`, '≤ 1.5×', 1.5);
  }
  pair('chat-long', 'chat', `16 KB prompt / short prompt, opinference CPU per request at c=${SETTINGS.connections}`, '≤ 1.5×', 1.5);
  pair('anthropic', 'chat', `translated (Anthropic) / OpenAI, opinference CPU per request at c=${SETTINGS.connections}, non-streaming`, '≤ 1.3×', 1.3);
  pair('anthropic-stream', 'chat-stream', `translated (Anthropic) / OpenAI, opinference CPU per request at c=${SETTINGS.connections}, streaming`, '≤ 1.3×', 1.3);
  if (memory?.rss?.final !== undefined) {
    push(`RSS after ${fmtInt(memory.rss.requests)} requests`, memory.rss.final / 1e6, fmtMB(memory.rss.final), '≤ 160 MB', 160);
  }
  for (const slow of memory?.slow ?? []) out.push(...streamAims(slow));
  return out;
}

function resultsTable(results: ScenarioResult[], flag: (run: Run | undefined) => string): string[] {
  const c = SETTINGS.connections;
  const out: string[] = [];
  out.push(`| scenario | target | c=1 p50 / p99 (ms) | added p50 / p99 (ms) | c=${c} req/s | CPU µs/req c=1 | CPU µs/req c=${c} |`);
  out.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const d = latencyPair(r.runs.direct?.latency);
    for (const kind of TARGET_KINDS) {
      const tr = r.runs[kind];
      if (!tr) continue;
      const l = latencyPair(tr.latency);
      const lf = flag(tr.latency);
      const sf = flag(tr.saturation);
      const added = kind === 'direct' || !tr.latency ? '—' : `${fmtSigned(l.p50 - d.p50)} / ${fmtSigned(l.p99 - d.p99)}`;
      const lat = tr.latency ? `${fmtMs(l.p50)} / ${fmtMs(l.p99)}${lf}` : '—';
      const cpu1 = kind === 'direct' || !tr.latency ? '—' : `${fmtInt(cpuUs(tr.latency))}${lf}`;
      const cpu32 = kind === 'direct' ? '—' : `${fmtInt(cpuUs(tr.saturation))}${sf}`;
      out.push(`| ${r.scenario.name} | ${TARGET_LABEL[kind]} | ${lat} | ${added} | ${fmtInt(tr.saturation.rps)}${sf} | ${cpu1} | ${cpu32} |`);
    }
  }
  return out;
}

function ratiosTable(results: ScenarioResult[]): string[] {
  const c = SETTINGS.connections;
  const out: string[] = [];
  out.push(`| scenario | CPU/req c=${c}: opinference / bare Node | CPU/req c=1: opinference / bare Node | CPU/req c=${c}: opinference / nginx | CPU/req c=${c}: nginx / bare Node | req/s c=${c}: opinference / bare Node |`);
  out.push('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const g = r.runs.gateway;
    const b = r.runs.bare;
    const n = r.runs.nginx;
    out.push(
      `| ${r.scenario.name} | ${fmtRatio(ratio(cpuUs(g?.saturation), cpuUs(b?.saturation)))} | ${fmtRatio(ratio(cpuUs(g?.latency), cpuUs(b?.latency)))} | ` +
        `${fmtRatio(ratio(cpuUs(g?.saturation), cpuUs(n?.saturation)))} | ${fmtRatio(ratio(cpuUs(n?.saturation), cpuUs(b?.saturation)))} | ${g && b ? `${((g.saturation.rps / b.saturation.rps) * 100).toFixed(0)}%` : 'n/a'} |`,
    );
  }
  return out;
}

function sortedCopy(values: number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

function refusedCodes(o: OpenSummary): string {
  const by = new Map<string, number>();
  for (const r of o.refused) by.set(`${r.status} ${r.code ?? '(no code)'}`, (by.get(`${r.status} ${r.code ?? '(no code)'}`) ?? 0) + 1);
  for (const f of o.failed) by.set(f.message, f.count);
  return by.size === 0 ? 'none' : [...by].map(([k, v]) => `${fmtInt(v)} ${k}`).join(', ');
}

/** The issue #21 item 4 and 5 targets of one streams-at-scale run. */
function streamAims(slow: SlowStreamsResult): Aim[] {
  const out: Aim[] = [];
  const w = slow.workers > 1 ? `, --workers ${slow.workers}` : '';
  const push = (what: string, value: number, shown: string, limit: string, ok: boolean) => {
    if (Number.isFinite(value)) out.push({ what, value, shown, limit, ok });
  };
  const n = fmtInt(slow.streams);
  const o = slow.opened;
  push(`${n} slow streams opened (none reset, none refused)${w}`, o.ok, `${fmtInt(o.ok)} of ${n} (not opened: ${refusedCodes(o)})`, 'all', o.ok === slow.streams);
  const g99 = percentile(sortedCopy(o.ttfbMs), 99);
  const d99 = slow.direct ? percentile(sortedCopy(slow.direct.ttfbMs), 99) : Number.NaN;
  push(`time to first byte p99 over direct, ${n} slow streams${w}`, g99 - d99, `${fmtSigned(g99 - d99)} ms (${fmtMs(g99)} / ${fmtMs(d99)})`, '≤ 250 ms', g99 - d99 <= 250);
  const h = percentile(sortedCopy(slow.health), 99);
  push(`/health p99 while the ${n} streams are held${w}`, h, `${fmtMs(h)} ms (${slow.health.length} probes)`, '< 50 ms', h < 50);
  push(`held streams receiving data${w}`, slow.heldLive.live, `${fmtInt(slow.heldLive.live)} of ${n}`, 'all', slow.heldLive.live === slow.streams && slow.heldLive.ended === 0);
  if (slow.rssPeak !== undefined) push(`peak RSS with ${n} slow streams${w}`, slow.rssPeak, `${(slow.rssPeak / 2 ** 20).toFixed(0)} MiB`, '< 1 GiB', slow.rssPeak < 2 ** 30);
  if (slow.rssHeld !== undefined && slow.rssIdle !== undefined) {
    const per = (slow.rssHeld - slow.rssIdle) / slow.streams / 1024;
    push(`RSS per held stream${w}`, per, `${per.toFixed(1)} KB`, '≤ 80 KB', per <= 80);
  }
  const e = slow.excess;
  if (e) {
    const offered = fmtInt(slow.excessOffered);
    const right = e.refused.filter((r) => r.status === 503 && r.code === 'gateway_overloaded').length;
    push(`${offered} streams offered beyond the ${n}: refused with 503 gateway_overloaded${w}`, right, `${fmtInt(right)} of ${offered} (others: ${e.ok > 0 ? `${fmtInt(e.ok)} opened, ` : ''}${refusedCodes({ ...e, refused: e.refused.filter((r) => !(r.status === 503 && r.code === 'gateway_overloaded')) })})`, 'all', right === slow.excessOffered);
    const ms = sortedCopy(e.refused.map((r) => r.ms));
    const max = ms[ms.length - 1] ?? Number.NaN;
    push(`time to refuse an excess stream${w}`, max, `max ${fmtMs(max)} ms (p50 ${fmtMs(percentile(ms, 50))}, p99 ${fmtMs(percentile(ms, 99))})`, '< 10 ms each', max < 10);
    if (slow.excessLive) push(`held streams receiving data while the excess is refused${w}`, slow.excessLive.live, `${fmtInt(slow.excessLive.live)} of ${n}`, 'all', slow.excessLive.live === slow.streams && slow.excessLive.ended === 0);
    const he = percentile(sortedCopy(slow.healthExcess), 99);
    push(`/health p99 while the excess is refused${w}`, he, `${fmtMs(he)} ms (${slow.healthExcess.length} probes)`, '< 50 ms', he < 50);
  }
  return out;
}

/** CPU µs per relayed chunk of `streams` slow streams (10 chunks per s each) using `cpus` CPUs. */
function perChunk(cpus: number | undefined, streams: number): string {
  return cpus === undefined || streams === 0 ? 'n/a' : ((cpus * 1e6) / (streams * 10)).toFixed(1);
}

function streamLines(s: SlowStreamsResult): string[] {
  const line = (label: string, values: number[]) => {
    const v = sortedCopy(values);
    return `${label} (${v.length}): p50 ${fmtMs(percentile(v, 50))} ms, p99 ${fmtMs(percentile(v, 99))} ms, max ${fmtMs(v[v.length - 1] ?? Number.NaN)} ms`;
  };
  const o = s.opened;
  const out = [
    `**${fmtInt(s.streams)} concurrent slow streams, \`serve --workers ${s.workers}\`** (a fresh gateway with \`server.overload.max_streams: ${fmtInt(Math.ceil(s.streams / s.workers))}\` per process; the upstream trickles one chunk per 100 ms per stream in 10 phase slots, up to ${s.chunks} per stream; load generators in child processes open ${OPENING} at a time each, then hold them ${s.healthWindowS.toFixed(1)} s; then ${fmtInt(s.excessOffered)} more are offered; then the client closes all):`,
    '',
    `- straight to the upstream: ${s.direct ? `${fmtInt(s.direct.ok)} opened in ${(s.direct.elapsedMs / 1000).toFixed(1)} s (not opened: ${refusedCodes(s.direct)}); ${line('time to first byte', s.direct.ttfbMs)}` : 'not measured'}`,
    `- through the bare Node proxy: ${s.bare ? `${fmtInt(s.bare.opened.ok)} opened in ${(s.bare.opened.elapsedMs / 1000).toFixed(1)} s, ${fmtInt(s.bare.live)} received data while held ${s.healthWindowS.toFixed(0)} s; it used ${fmtCpus(s.bare.cpus)} CPUs (${perChunk(s.bare.cpus, s.streams)} µs per relayed chunk); ${line('time to first byte', s.bare.opened.ttfbMs)}` : 'not measured'}`,
    `- through the gateway: ${fmtInt(o.ok)} opened in ${(o.elapsedMs / 1000).toFixed(1)} s (not opened: ${refusedCodes(o)}); ${line('time to first byte', o.ttfbMs)}; ${line('to the TCP connection', o.connectMs)}; ${line('to the response head', o.headMs)}`,
    `- held: ${fmtInt(s.heldLive.live)} received data in the window, ${fmtInt(s.heldLive.ended)} ended or failed${s.heldLive.firstEnd ? ` (first: ${s.heldLive.firstEnd})` : ''}; gateway ${fmtCpus(s.gatewayCpus)} CPUs (${perChunk(s.gatewayCpus, s.heldLive.live)} µs per relayed chunk); RSS ${fmtMB(s.rssIdle)} before, ${fmtMB(s.rssHeld)} held (peak ${fmtMB(s.rssPeak)}), ${s.rssHeld !== undefined && s.rssIdle !== undefined ? `${((s.rssHeld - s.rssIdle) / s.streams / 1024).toFixed(1)} KB per stream` : 'n/a'}`,
    `- \`GET /health\`: ${line('while opening', s.healthOpening)}; ${line('while held', s.health)}${s.excess ? `; ${line('while the excess was offered', s.healthExcess)}` : ''}`,
  ];
  if (s.excess) {
    out.push(`- excess: ${fmtInt(s.excessOffered)} offered in ${(s.excess.elapsedMs / 1000).toFixed(1)} s: ${refusedCodes(s.excess)}${s.excess.ok ? `, ${fmtInt(s.excess.ok)} opened` : ''}; ${line('time to the whole refusal', s.excess.refused.map((r) => r.ms))}; held streams receiving meanwhile: ${fmtInt(s.excessLive?.live ?? 0)} of ${fmtInt(s.streams)}`);
  }
  out.push('');
  return out;
}

function memoryLines(m: MemoryResult): string[] {
  const out: string[] = ['## Memory', ''];
  if (m.rss) {
    const r = m.rss;
    out.push(
      `**RSS after ${fmtInt(r.requests)} requests** (a fresh gateway, non-streaming chat, ${SETTINGS.connections} connections, ${r.seconds.toFixed(0)} s, ${fmtInt(r.ok)} 2xx, ${fmtInt(r.bad)} failed): ` +
        `**${fmtMB(r.final)}** at the end (peak ${fmtMB(r.peak)}; ${fmtMB(r.idle)} before the first request; ${r.cpuUsPerRequest === undefined ? 'CPU n/a' : `${Math.round(r.cpuUsPerRequest)} µs of gateway CPU per request`}${GATEWAY_NODE_ARGS.length ? `; node ${GATEWAY_NODE_ARGS.join(' ')}` : ''}). After each tenth: ${r.series.map((s) => `${fmtInt(s.after)}: ${fmtMB(s.rss)}`).join(', ')}.`,
      '',
    );
  }
  for (const slow of m.slow) out.push(...streamLines(slow));
  for (const why of m.slowSkipped) out.push(`Slow streams: skipped — ${why}.`, '');
  return out;
}

function aimsLines(list: Aim[]): string[] {
  if (list.length === 0) return [];
  return ['## Against the targets (issues #12 and #21)', '', '| figure | measured | target | |', '| --- | ---: | ---: | :---: |', ...list.map((a) => `| ${a.what} | ${a.shown} | ${a.limit} | ${a.ok ? '✅' : '❌'} |`), ''];
}

function report(results: ScenarioResult[], info: RunInfo): string {
  const out: string[] = [];
  const ncpu = os.cpus().length;
  const c = SETTINGS.connections;
  out.push(`# opinference benchmark`, '');
  out.push(`Run ${info.started.toISOString()} (${info.elapsedS.toFixed(0)} s) with \`npm run bench${MEMORY_ONLY ? ' -- --memory' : QUICK ? ' -- --quick' : ''}\`.`, '');
  out.push('## Machine', '', ...machine(), '');
  out.push(
    `The load generator, the zero-latency upstream, the baseline proxies and the gateway all share these ${ncpu} CPUs; only one target is loaded at a time. ` +
      'CPU per request is read from /proc per process, so it is the least noise-sensitive figure here.',
    '',
  );
  if (info.background !== undefined) {
    const busy = info.background >= 0.2;
    out.push(`CPUs busy with other work just before the run: ${fmtCpus(info.background)} of ${ncpu}${busy ? ' — **the machine was not idle; these numbers understate what it can do**' : ''}.`, '');
  }
  if (results.length) {
    out.push('## Settings', '');
    out.push(`- c=1: 1 connection, requests back to back for ${SETTINGS.latencySeconds} s per target (autocannon in the bench process); p50/p99 of the full response time (streams: until the last byte), in ms, from autocannon's per-response timings (its own histogram keeps whole ms only). **Added** = target − direct.`);
    out.push(
      `- c=${c}: ${c} connections for ${SETTINGS.saturationSeconds} s per target, ${WRK ? 'with `wrk -t1` (its own process; status checked, bodies are checked by the sanity request and the c=1 run)' : 'with autocannon in the bench process (every body checked)'}; 2xx responses per second.`,
    );
    out.push(`- Warm-up: ${SETTINGS.warmupSeconds} s before each measured run. Every target answers one checked request first.`);
    if (QUICK) out.push(`- \`--quick\`: c=${c} only; each target measured in ${QUICK_ROUNDS} rounds alternating with the others, its median round (by CPU per request) shown; fails above ${QUICK_MAX_RATIO}× bare Node's CPU per request.`);
    out.push('- CPU µs/req: utime+stime of the target\'s process tree (/proc) during the measured run ÷ its 2xx responses. Direct has no proxy.');
    out.push(
      '- Targets: **direct** (the load generator calls the upstream), **bare Node** (`bench/bare-proxy.ts`: node:http + undici Pool, body and answer piped untouched), ' +
        `**nginx** (${info.nginx}), **opinference** (the built gateway, \`POST /v1/chat/completions\` with a key made by \`opinference keys create\` with rpm/tpm and a USD limit; records written to SQLite, metrics, health and breaker on, \`OP_LOG_LEVEL=warn\`).`,
    );
    out.push('- Anthropic scenarios: the client sends OpenAI chat to opinference, which translates to Messages (`anthropic` provider kind) and back; direct, bare Node and nginx send a native `POST /v1/messages` to the same upstream.');
    const cli = relative(ROOT, CLI) || CLI;
    if (cli !== join('dist', 'src', 'cli.js') || GATEWAY_NODE_ARGS.length) out.push(`- Gateway command: \`node ${[...GATEWAY_NODE_ARGS, cli].join(' ')} serve\` (relative to the checkout).`);
    out.push('');
  }
  let flagged = false;
  const flag = (run: Run | undefined): string => {
    if (run?.cpu?.otherCpus === undefined || run.cpu.otherCpus < CONTENDED_CPUS) return '';
    flagged = true;
    return ' ⚠';
  };
  out.push(...aimsLines(aims(results, info.memory)));
  if (results.length) {
    out.push('## Results', '', ...resultsTable(results, flag), '');
    if (flagged) out.push(`⚠ measured while other work on the machine used ${CONTENDED_CPUS} CPUs or more (see "other" below): that number is less reliable.`, '');
    out.push('## Ratios', '', ...ratiosTable(results), '');
    out.push('## Details', '');
    out.push('| scenario | target | run | load gen | 2xx/s | not 2xx | load gen p50 / p99 / mean (ms) | CPUs: load gen / upstream / proxy / other | load gen CPU µs/req |');
    out.push('| --- | --- | --- | --- | ---: | ---: | ---: | --- | ---: |');
    const problems: string[] = [];
    for (const r of results) {
      for (const kind of TARGET_KINDS) {
        for (const phase of ['latency', 'saturation'] as const) {
          const run = r.runs[kind]?.[phase];
          if (!run) continue;
          if (run.bad > 0) problems.push(`${r.scenario.id} ${TARGET_LABEL[kind]} ${phase}: ${run.bad} failed (not 2xx, errors, timeouts or wrong bodies)`);
          const cpu = run.cpu;
          const share = (x: number | undefined) => (cpu && x !== undefined ? fmtCpus(x / cpu.wall) : 'n/a');
          const shares = cpu ? `${share(cpu.loadgen)} / ${share(cpu.upstream)} / ${kind === 'direct' ? '—' : share(cpu.proxy)} / ${fmtCpus(cpu.otherCpus)}` : 'n/a';
          const lg = cpu?.loadgen !== undefined && run.ok > 0 ? fmtInt((cpu.loadgen * 1e6) / run.ok) : 'n/a';
          out.push(`| ${r.scenario.name} | ${TARGET_LABEL[kind]} | c=${phase === 'latency' ? 1 : c} | ${run.loadgen} | ${fmtInt(run.rps)} | ${run.bad} | ${fmtMs(run.p50)} / ${fmtMs(run.p99)} / ${fmtMs(run.mean)} | ${shares} | ${lg} |`);
        }
      }
    }
    out.push(
      '',
      'CPUs: average number of CPUs each used during the measured run (1.00 = one CPU fully busy); "other" is the rest of the machine (other processes, kernel work not charged to the bench\'s processes).',
    );
    out.push(
      '',
      `Generation records written by the gateway: ${info.records}. Gateway RSS at the end: ${fmtMB(info.gatewayRss)} (peak ${fmtMB(info.gatewayRssPeak)}). ${info.metrics}`,
    );
    if (problems.length) out.push('', '**Failed or unexpected responses:**', '', ...problems.map((p) => `- ${p}`));
    out.push('');
  }
  if (info.memory) out.push(...memoryLines(info.memory));
  return out.join('\n');
}

/** An OTLP/HTTP sink: answers every export with 200 and counts the spans it was sent. */
async function startOtlpSink(): Promise<{ origin: string; spans: () => number; close: () => Promise<void> }> {
  const { createServer: createHttpServer } = await import('node:http');
  let spans = 0;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: { scopeSpans?: { spans?: unknown[] }[] }[] };
          for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
        } catch {
          // not JSON: not counted
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, HOST, r));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://${HOST}:${port}`, spans: () => spans, close: () => new Promise((r) => server.close(() => r())) };
}

/** Scenarios of the tracing comparison. */
const TRACING_SCENARIOS = ['chat', 'chat-stream'];

interface TracingResult {
  scenario: Scenario;
  /** One measurement per round, off and on alternating (so both see the same machine load). */
  off: TargetResult[];
  on: TargetResult[];
}

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Medians over rounds: latency p50/p99 (1 connection), saturation rps, gateway CPU µs per request (saturation). */
function medians(runs: TargetResult[]): { p50: number; p99: number; rps: number; cpuUs: number } {
  return {
    p50: median(runs.map((r) => latencyPair(r.latency).p50)),
    p99: median(runs.map((r) => latencyPair(r.latency).p99)),
    rps: median(runs.map((r) => r.saturation.rps)),
    cpuUs: median(runs.map((r) => cpuUs(r.saturation))),
  };
}

function tracingReport(results: TracingResult[], spans: number): string {
  const out: string[] = ['## Tracing on vs off', ''];
  const rounds = results[0]?.off.length ?? 0;
  out.push(
    'Off: the gateway above, no `OTEL_*` variable (the OpenTelemetry SDK is not loaded; the gateway events have no OpenTelemetry subscriber). ' +
      'On: a second gateway with `OTEL_EXPORTER_OTLP_ENDPOINT` set, exporting every span (sampler always on) and the GenAI metrics over OTLP/HTTP JSON to a sink in the bench process. ' +
      `Both run side by side and are measured in ${rounds} alternating rounds (off, on, off, on …); the table shows medians over the rounds.`,
    '',
  );
  out.push('| scenario | off p50 / p99 (ms) | on p50 / p99 (ms) | added by tracing p50 / p99 (ms) | off rps | on rps | on / off | gateway CPU µs per request off / on |');
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const a = medians(r.off);
    const b = medians(r.on);
    out.push(
      `| ${r.scenario.name} | ${fmtMs(a.p50)} / ${fmtMs(a.p99)} | ${fmtMs(b.p50)} / ${fmtMs(b.p99)} | ${fmtSigned(b.p50 - a.p50)} / ${fmtSigned(b.p99 - a.p99)} | ` +
        `${fmtInt(a.rps)} | ${fmtInt(b.rps)} | ${((b.rps / a.rps) * 100).toFixed(0)}% | ${fmtInt(a.cpuUs)} / ${fmtInt(b.cpuUs)} |`,
    );
  }
  out.push('', `Spans received by the sink: ${fmtInt(spans)}.`, '');
  return out.join('\n');
}

function countRecords(dbFile: string): string {
  try {
    const db = new SQLite(dbFile, { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare('SELECT status, COUNT(*) AS n FROM generations GROUP BY status ORDER BY status').all() as { status: string; n: number }[];
      const total = rows.reduce((a, r) => a + r.n, 0);
      return `${fmtInt(total)} (${rows.map((r) => `${r.status}: ${fmtInt(r.n)}`).join(', ') || 'none'})`;
    } finally {
      db.close();
    }
  } catch (err) {
    return `unknown (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** One scrape of `GET /metrics`, to show metrics were on: its size and the successful generations it counted. */
async function scrapeMetrics(origin: string): Promise<string> {
  try {
    const res = await fetch(`${origin}/metrics`);
    const text = await res.text();
    let success = 0;
    for (const line of text.split('\n')) if (line.startsWith('opinference_generations_total{') && line.includes('status="success"')) success += Number(line.slice(line.lastIndexOf(' ') + 1));
    return `\`GET /metrics\` at the end: ${res.status}, ${fmtInt(text.length)} bytes, \`opinference_generations_total{status="success"}\` summed: ${fmtInt(success)}.`;
  } catch (err) {
    return `\`GET /metrics\` at the end failed: ${err instanceof Error ? err.message : String(err)}.`;
  }
}

// ---------------------------------------------------------------------------------------------

/** `BENCH_WORKERS=1,2`: saturation throughput of non-streaming chat through `serve --workers N`, per N. */
async function workersComparison(counts: number[]): Promise<void> {
  const scenario = SCENARIOS.find((s) => s.id === 'chat')!;
  const started = new Date();
  const background = await backgroundLoad();
  tempDir = mkdtempSync(join(os.tmpdir(), 'op-bench-'));
  const upstream = await startUpstream();
  const rows: string[] = [];
  for (const [i, n] of counts.entries()) {
    const dir = join(tempDir, `run${i}-w${n}`);
    mkdirSync(dir);
    const env = { OP_REDIS_URL: process.env.OP_REDIS_URL || 'redis://127.0.0.1:6379', OP_REDIS_PREFIX: `op-bench:${process.pid}:${i}:` };
    const gateway = await startGateway(dir, upstream, [scenario], ['--workers', String(n)], env);
    await sleep(2000); // every worker listening
    const t = makeTarget('gateway', scenario, { upstream, bare: undefined, nginx: undefined, gateway })!;
    await sanityCheck(scenario, t);
    await saturationRun(t, SETTINGS.connections, SETTINGS.warmupSeconds);
    const run = await saturationRun(t, SETTINGS.connections, SETTINGS.saturationSeconds);
    rows.push(`| ${n} | ${fmtInt(run.rps)} | ${run.bad} | ${fmtMs(run.p50)} / ${fmtMs(run.p99)} |`);
    process.stderr.write(`bench: --workers ${n}: ${fmtInt(run.rps)} 2xx/s\n`);
    await stopChild(gateway.child);
  }
  await stopChild(upstream.child);
  const text = [
    `# serve --workers: throughput (${started.toISOString()})`,
    '',
    ...machine(),
    `- busy CPUs before the run (other work): ${background === undefined ? 'unknown' : background.toFixed(2)}`,
    `- non-streaming chat against the zero-work upstream, ${SETTINGS.connections} connections, ${SETTINGS.saturationSeconds} s, load generator ${WRK ? 'wrk' : 'autocannon'}; the load generator, the upstream and the gateway share the machine`,
    '',
    '| workers | 2xx/s | not 2xx | load gen p50 / p99 (ms) |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`\n${text}`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'workers.md'), text);
}

/** `--quick`: the regression guard. Returns the exit code. */
function quickVerdict(results: ScenarioResult[]): number {
  let code = 0;
  for (const r of results) {
    const v = ratio(cpuUs(r.runs.gateway?.saturation), cpuUs(r.runs.bare?.saturation));
    if (!Number.isFinite(v)) {
      process.stderr.write(`bench --quick: ${r.scenario.id}: no CPU figures (is /proc readable?); not judged\n`);
    } else if (v > QUICK_MAX_RATIO) {
      process.stderr.write(`bench --quick: ${r.scenario.id}: opinference CPU per request ${fmtRatio(v)} bare Node's — worse than ${QUICK_MAX_RATIO}×: FAIL\n`);
      code = 1;
    } else {
      process.stderr.write(`bench --quick: ${r.scenario.id}: opinference CPU per request ${fmtRatio(v)} bare Node's (limit ${QUICK_MAX_RATIO}×): ok\n`);
    }
  }
  return code;
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) {
    process.stderr.write(`bench: ${CLI} not found: run npm run build first (npm ci also builds it)\n`);
    process.exitCode = 1;
    return;
  }
  if (process.env.BENCH_WORKERS) return workersComparison(process.env.BENCH_WORKERS.split(',').map((n) => Math.round(Number(n))).filter((n) => n >= 1));
  const withMemory = MEMORY_ONLY || (!QUICK && process.env.BENCH_MEMORY !== '0');

  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean) ?? (QUICK ? QUICK_SCENARIOS : undefined);
  const scenarios = MEMORY_ONLY ? [] : only ? SCENARIOS.filter((s) => only.includes(s.id)) : SCENARIOS;
  if (!MEMORY_ONLY && scenarios.length === 0) throw new Error(`BENCH_ONLY matches no scenario; known: ${SCENARIOS.map((s) => s.id).join(', ')}`);
  const targetKinds = process.env.BENCH_TARGETS?.split(',').map((s) => s.trim()) ?? (QUICK ? ['bare', 'gateway'] : TARGET_KINDS);
  for (const k of targetKinds) if (!TARGET_KINDS.includes(k as TargetKind)) throw new Error(`BENCH_TARGETS: unknown target ${k}; known: ${TARGET_KINDS.join(', ')}`);

  const started = new Date();
  const background = await backgroundLoad();
  if (background !== undefined && background >= 0.2) {
    process.stderr.write(`bench: warning: ${background.toFixed(2)} CPUs were busy with other work before the run; results will be low\n`);
  }
  tempDir = mkdtempSync(join(os.tmpdir(), 'op-bench-'));
  const upstream = await startUpstream();

  const results: ScenarioResult[] = [];
  let records = '';
  let metrics = '';
  let gatewayRss: number | undefined;
  let gatewayRssPeak: number | undefined;
  let tracingText = '';
  let nginxNote = 'not measured';
  if (scenarios.length) {
    const gateway = await startGateway(tempDir, upstream, scenarios);
    const bare = targetKinds.includes('bare') ? await startBareProxy(upstream) : undefined;
    const nginxBin = targetKinds.includes('nginx') ? findNginx() : undefined;
    const nginx = nginxBin ? await startNginx(nginxBin, join(tempDir, 'nginx'), upstream) : undefined;
    if (targetKinds.includes('nginx')) {
      nginxNote = nginx
        ? '`proxy_pass` to an `upstream` block with `keepalive`, `proxy_http_version 1.1`, `proxy_buffering off`, one worker process, access log off'
        : '**skipped: no `nginx` on PATH or in /usr/sbin** (Debian: `apt-get install nginx`)';
      if (!nginx) process.stderr.write('bench: nginx not found: the nginx baseline is skipped\n');
    }
    const stack: Stack = { upstream, bare, nginx, gateway };
    process.stderr.write(`bench: upstream :${upstream.port}, gateway ${gateway.origin}${bare ? `, bare Node ${bare.origin}` : ''}${nginx ? `, nginx ${nginx.origin}` : ''}; load generator at c=${SETTINGS.connections}: ${WRK ? 'wrk' : 'autocannon'}\n`);
    const watched: Watched = { upstream: upstream.child.pid, all: [gateway.child.pid, bare?.child.pid, nginx?.child.pid] };

    for (const s of scenarios) {
      const result: ScenarioResult = { scenario: s, runs: {} };
      const ts = targetKinds.map((k) => makeTarget(k as TargetKind, s, stack)).filter((t): t is Target => t !== undefined);
      for (const t of ts) await sanityCheck(s, t);
      if (QUICK) {
        // Noisy CI machines: rounds alternating the targets; each target keeps its median run by CPU per request.
        const rounds: Partial<Record<TargetKind, TargetResult[]>> = {};
        for (let i = 0; i < QUICK_ROUNDS; i++) for (const t of ts) (rounds[t.kind] ??= []).push(await measureTarget(s, t, watched, false));
        for (const [kind, list] of Object.entries(rounds)) result.runs[kind as TargetKind] = [...list].sort((a, b) => cpuUs(a.saturation) - cpuUs(b.saturation))[list.length >> 1];
      } else {
        for (const t of ts) result.runs[t.kind] = await measureTarget(s, t, watched);
      }
      results.push(result);
      if (!alive(gateway.child)) throw new Error(`gateway exited during the run; its log:\n${tail(gateway.logFile)}`);
    }
    gatewayRss = rssBytes(gateway.child.pid);
    gatewayRssPeak = rssBytes(gateway.child.pid, 'VmHWM');

    const tracingScenarios = results.filter((r) => TRACING_SCENARIOS.includes(r.scenario.id) && r.runs.gateway);
    if (!QUICK && process.env.BENCH_TRACING !== '0' && tracingScenarios.length > 0) {
      const sink = await startOtlpSink();
      const tracedDir = join(tempDir, 'traced');
      mkdirSync(tracedDir);
      const traced = await startGateway(tracedDir, upstream, scenarios, [], { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_SERVICE_NAME: 'opinference-bench', OTEL_TRACES_SAMPLER: 'always_on', OTEL_METRIC_EXPORT_INTERVAL: '5000' });
      const tracedWatched: Watched = { upstream: upstream.child.pid, all: [...watched.all, traced.child.pid] };
      const tracing: TracingResult[] = [];
      const rounds = Math.round(envNumber('BENCH_TRACING_ROUNDS', 3));
      for (const r of tracingScenarios) {
        const viaPlain = makeTarget('gateway', r.scenario, stack)!;
        const viaTraced = makeTarget('gateway', r.scenario, { ...stack, gateway: traced })!;
        await sanityCheck(r.scenario, viaTraced);
        const result: TracingResult = { scenario: r.scenario, off: [], on: [] };
        for (let i = 0; i < rounds; i++) {
          result.off.push(await measureTarget(r.scenario, viaPlain, tracedWatched));
          result.on.push(await measureTarget(r.scenario, viaTraced, tracedWatched));
        }
        tracing.push(result);
      }
      await stopChild(traced.child);
      tracingText = tracingReport(tracing, sink.spans());
      await sink.close();
    }
    metrics = await scrapeMetrics(gateway.origin); // after the tracing rounds too, so it covers what the records do
    const logTail = tail(gateway.logFile, 5);
    await stopChild(gateway.child);
    if (bare) await stopChild(bare.child);
    if (nginx) await stopChild(nginx.child);
    records = countRecords(gateway.dbFile);
    if (logTail && logTail !== '(no log)') process.stderr.write(`bench: last gateway log lines:\n${logTail}\n`);
  }

  const memory = withMemory ? await memorySection(tempDir, upstream, SETTINGS.memoryRequests, SETTINGS.slowStreams) : undefined;
  await stopChild(upstream.child);

  const elapsed = (Date.now() - started.getTime()) / 1000;
  const text = report(results, { started, elapsedS: elapsed, background, records, metrics, gatewayRss, gatewayRssPeak, nginx: nginxNote, memory }) + (tracingText ? `\n${tracingText}` : '');
  process.stdout.write(`\n${text}`);
  if (QUICK) {
    process.exitCode = quickVerdict(results);
    return; // --quick writes no file
  }
  const file = MEMORY_ONLY ? 'memory.md' : 'latest.md';
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, file), text);
  process.stderr.write(`bench: wrote ${join('bench', 'results', file)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  activeRun?.stop();
  process.exit(1); // the 'exit' handler kills the children and removes the temp dir
});
