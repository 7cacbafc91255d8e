/**
 * Gateway overhead benchmark (`npm run bench`, after `npm run build`).
 *
 * Starts a zero-latency upstream (bench/upstream.ts) and the built gateway (dist/src/cli.js) as
 * child processes on 127.0.0.1, then for every scenario measures, with autocannon in this
 * process:
 *   - latency at low load: 1 connection, requests back to back; p50/p99 of the full response
 *     time (for streams: until the last byte), direct to the upstream and through the gateway;
 *   - saturation throughput: many connections; 2xx responses per second, direct and through
 *     the gateway.
 * Prints a Markdown report and writes it to bench/results/latest.md.
 *
 * Settings can be overridden by environment variables (seconds / counts):
 *   BENCH_LATENCY_S (5), BENCH_SATURATION_S (8), BENCH_WARMUP_S (1), BENCH_CONNECTIONS (64),
 *   BENCH_ONLY (comma-separated scenario ids), BENCH_TRACING (0 skips the tracing comparison),
 *   BENCH_TRACING_ROUNDS (3).
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
 * (in routing order) and the one the direct baseline calls. Behaviours are the path prefixes
 * bench/upstream.ts serves (`ok`, `fail`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { EventEmitter } from 'node:events';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import SQLite from 'better-sqlite3';
import { stringify as toYaml } from 'yaml';
import type { Behaviour } from './upstream.js';

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
  /** Behaviour the direct baseline calls; default: the last endpoint (the one expected to serve). */
  direct?: Behaviour;
  /** The user message; default "hi". */
  prompt?: string;
  /** Extra request fields (merged into the body after model/messages/stream). */
  extraBody?: Record<string, unknown>;
}

/** About `chars` characters of varied English prose (deterministic), for prompt-size scenarios. */
function prose(chars: number): string {
  const words = ['the', 'gateway', 'routes', 'each', 'request', 'to', 'a', 'provider', 'and', 'records', 'its', 'usage', 'cost', 'latency', 'while', 'streaming', 'tokens', 'back', 'from', 'model', 'with', 'fallbacks', 'when', 'an', 'endpoint', 'fails'];
  let out = '';
  for (let i = 0; out.length < chars; i++) {
    out += words[(i * 7 + (i >> 3)) % words.length]!;
    out += i % 13 === 12 ? '. ' : ' ';
  }
  return out.slice(0, chars);
}

const SCENARIOS: Scenario[] = [
  { id: 'chat', name: 'chat, non-streaming', stream: false, endpoints: ['ok'] },
  { id: 'chat-stream', name: 'chat, streaming', stream: true, endpoints: ['ok'] },
  { id: 'chat-long', name: 'chat, non-streaming, 16 KB prompt', stream: false, endpoints: ['ok'], prompt: prose(16_000) },
  // One failover: the first endpoint (by provider.order) answers 503 at once, the second serves.
  // The direct baseline calls `ok`, so "added" is the gateway plus one failed attempt.
  { id: 'failover', name: 'chat, non-streaming, first endpoint fails at once, second serves', stream: false, endpoints: ['fail', 'ok'], extraBody: { provider: { order: ['up-fail', 'up-ok'] } } },
  { id: 'failover-stream', name: 'chat, streaming, first endpoint fails at once, second serves', stream: true, endpoints: ['fail', 'ok'], extraBody: { provider: { order: ['up-fail', 'up-ok'] } } },
];

// ---------------------------------------------------------------------------------------------
// Settings

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!(n > 0)) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

const SETTINGS = {
  latencySeconds: envNumber('BENCH_LATENCY_S', 5),
  saturationSeconds: envNumber('BENCH_SATURATION_S', 8),
  warmupSeconds: envNumber('BENCH_WARMUP_S', 1),
  connections: Math.round(envNumber('BENCH_CONNECTIONS', 64)),
};

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist', 'src', 'cli.js');
const GATEWAY_NODE_ARGS = (process.env.BENCH_GATEWAY_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
const UPSTREAM_SCRIPT = join(ROOT, 'bench', 'upstream.ts');
const RESULTS_DIR = join(ROOT, 'bench', 'results');
const ADMIN_KEY = 'bench-admin-key';
const HOST = '127.0.0.1';

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, untyped): the subset used here.

interface AutocannonOptions {
  url: string;
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  connections: number;
  duration: number;
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

function killAll(signal: NodeJS.Signals): void {
  for (const child of children) if (alive(child)) child.kill(signal);
}

process.on('exit', () => {
  killAll('SIGKILL');
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
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

interface Upstream {
  child: ChildProcess;
  port: number;
  url(behaviour: Behaviour): string;
}

/** Start bench/upstream.ts and read its port from the first stdout line. */
async function startUpstream(): Promise<Upstream> {
  const child = track(spawn(process.execPath, ['--import', 'tsx', UPSTREAM_SCRIPT], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] }));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error('upstream did not start within 15 s')), 15_000);
    child.once('exit', (code, signal) => reject(new Error(`upstream exited early (${code ?? signal})`)));
    lines.once('line', (line) => {
      clearTimeout(timer);
      try {
        resolvePort((JSON.parse(line) as { port: number }).port);
      } catch {
        reject(new Error(`unexpected upstream output: ${line}`));
      }
    });
  });
  lines.close();
  child.stdout!.resume();
  return { child, port, url: (b) => `http://${HOST}:${port}/${b}/v1` };
}

interface GatewayProcess {
  child: ChildProcess;
  origin: string;
  logFile: string;
  dbFile: string;
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function providerId(b: Behaviour): string {
  return `up-${b}`;
}

function gatewayConfig(upstream: Upstream, scenarios: Scenario[]): unknown {
  const behaviours = [...new Set(scenarios.flatMap((s) => s.endpoints))];
  return {
    // The failover scenarios must fail over on every request: keep the breaker from opening.
    routing: { circuit_breaker: { failure_threshold: 1_000_000_000 }, recent_failure_ms: 0 },
    providers: behaviours.map((b) => ({ id: providerId(b), kind: 'openai', base_url: upstream.url(b) })),
    models: scenarios.map((s) => ({
      id: `bench/${s.id}`,
      context_length: 8192,
      endpoints: s.endpoints.map((b) => ({ provider: providerId(b), upstream_model: 'm', pricing: { prompt: 1, completion: 2 } })),
    })),
  };
}

/** Start the built gateway on a free port with a temp config and SQLite file; wait for /health. */
async function startGateway(dir: string, upstream: Upstream, scenarios: Scenario[], serveArgs: string[] = [], extraEnv: Record<string, string> = {}): Promise<GatewayProcess> {
  const configFile = join(dir, 'opinference.yaml');
  writeFileSync(configFile, toYaml(gatewayConfig(upstream, scenarios)));
  const dbFile = join(dir, 'bench.db');
  const logFile = join(dir, 'gateway.log');
  const port = await freePort();
  const logFd = openSync(logFile, 'a');
  const child = track(
    spawn(process.execPath, [...GATEWAY_NODE_ARGS, CLI, 'serve', ...serveArgs], {
      cwd: dir,
      stdio: ['ignore', logFd, logFd],
      env: {
        ...process.env,
        OP_CONFIG: configFile,
        OP_PORT: String(port),
        OP_HOST: HOST,
        OP_DATABASE_URL: `sqlite:${dbFile}`,
        OP_ADMIN_KEY: ADMIN_KEY,
        OP_LOG_LEVEL: 'warn',
        NODE_ENV: 'production',
        ...extraEnv,
      },
    }),
  );
  closeSync(logFd);
  const origin = `http://${HOST}:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (!alive(child)) throw new Error(`gateway exited during start-up; its log:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${origin}/health`);
      if (res.ok) return { child, origin, logFile, dbFile };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`gateway not healthy within 20 s; its log:\n${tail(logFile)}`);
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface Target {
  kind: 'direct' | 'gateway';
  url: string;
  headers: Record<string, string>;
  body: string;
  verify: (body: string) => boolean;
}

function requestBody(s: Scenario): Record<string, unknown> {
  return { model: `bench/${s.id}`, messages: [{ role: 'user', content: s.prompt ?? 'hi' }], stream: s.stream, ...s.extraBody };
}

function verifier(s: Scenario): (body: string) => boolean {
  return s.stream ? (b) => b.includes('"usage"') && b.trimEnd().endsWith('data: [DONE]') : (b) => b.includes('"chat.completion"') && b.includes('"usage"');
}

function targets(s: Scenario, upstream: Upstream, gateway: GatewayProcess): Target[] {
  const body = JSON.stringify(requestBody(s));
  const verify = verifier(s);
  const json = { 'content-type': 'application/json' };
  const direct = s.direct ?? s.endpoints[s.endpoints.length - 1]!;
  return [
    { kind: 'direct', url: `${upstream.url(direct)}/chat/completions`, headers: json, body, verify },
    { kind: 'gateway', url: `${gateway.origin}/v1/chat/completions`, headers: { ...json, authorization: `Bearer ${ADMIN_KEY}` }, body, verify },
  ];
}

/** One request with fetch; throws with the body when the answer is wrong. */
async function sanityCheck(s: Scenario, t: Target): Promise<void> {
  const res = await fetch(t.url, { method: 'POST', headers: t.headers, body: t.body });
  const text = await res.text();
  if (res.status !== 200 || !t.verify(text)) {
    throw new Error(`${s.id} ${t.kind}: unexpected answer ${res.status}: ${text.slice(0, 500)}`);
  }
}

interface Run {
  result: AutocannonResult;
  /** 2xx response times in ms, full precision (autocannon's histogram keeps whole ms only). */
  latencies: number[];
  /** 2xx responses per second. */
  rps: number;
  cpu?: CpuShare;
}

function autocannonRun(t: Target, connections: number, seconds: number): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const latencies: number[] = [];
    const instance = autocannon(
      { url: t.url, method: 'POST', headers: t.headers, body: t.body, connections, duration: seconds, pipelining: 1, timeout: 10, verifyBody: t.verify },
      (err, result) => {
        activeRun = undefined;
        if (err) reject(err);
        else resolveRun({ result, latencies, rps: result['2xx'] / result.duration });
      },
    );
    activeRun = instance;
    instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) latencies.push(ms);
    });
  });
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** CPU seconds used so far by a process (Linux /proc; undefined elsewhere). */
function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11] = utime, fields[12] = stime (clock ticks; USER_HZ is 100 on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Peak resident memory of a process in MiB (Linux /proc). */
function peakRssMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
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

/** CPU used during a run, in CPUs (1.0 = one full CPU): per process and by everything else. */
interface CpuShare {
  loadgen: number;
  upstream: number | undefined;
  gateway: number | undefined;
  /** Processes other than these three (other work on the machine, and the kernel outside them). */
  other: number | undefined;
}

async function measureCpu<T>(pids: { upstream?: number; gateway?: number }, fn: () => Promise<T>): Promise<{ value: T; cpu: CpuShare }> {
  const t0 = performance.now();
  const sys0 = systemTicks();
  const self0 = process.cpuUsage();
  const up0 = cpuSeconds(pids.upstream);
  const gw0 = cpuSeconds(pids.gateway);
  const value = await fn();
  const wall = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const up1 = cpuSeconds(pids.upstream);
  const gw1 = cpuSeconds(pids.gateway);
  const sys = busyCpus(sys0, systemTicks());
  const share = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : (b - a) / wall);
  const cpu: CpuShare = { loadgen: (self.user + self.system) / 1e6 / wall, upstream: share(up0, up1), gateway: share(gw0, gw1), other: undefined };
  if (sys !== undefined) cpu.other = Math.max(0, sys - cpu.loadgen - (cpu.upstream ?? 0) - (cpu.gateway ?? 0));
  return { value, cpu };
}

/** CPUs busy on the machine over `ms` before the benchmark starts anything. */
async function backgroundLoad(ms = 1000): Promise<number | undefined> {
  const a = systemTicks();
  await sleep(ms);
  return busyCpus(a, systemTicks());
}

interface TargetResult {
  latency: Run;
  saturation: Run;
}

interface ScenarioResult {
  scenario: Scenario;
  direct: TargetResult;
  gateway: TargetResult;
}

async function measureTarget(s: Scenario, t: Target, pids: { upstream?: number; gateway?: number }): Promise<TargetResult> {
  const label = `${s.id} / ${t.kind}`;
  process.stderr.write(`bench: ${label}: warm-up, latency (1 connection, ${SETTINGS.latencySeconds} s)…\n`);
  const ownPids = t.kind === 'gateway' ? pids : { upstream: pids.upstream };
  await autocannonRun(t, 4, SETTINGS.warmupSeconds);
  const low = await measureCpu(ownPids, () => autocannonRun(t, 1, SETTINGS.latencySeconds));
  const latency = { ...low.value, cpu: low.cpu };
  process.stderr.write(`bench: ${label}: saturation (${SETTINGS.connections} connections, ${SETTINGS.saturationSeconds} s)…\n`);
  await autocannonRun(t, SETTINGS.connections, SETTINGS.warmupSeconds);
  const high = await measureCpu(ownPids, () => autocannonRun(t, SETTINGS.connections, SETTINGS.saturationSeconds));
  const saturation = { ...high.value, cpu: high.cpu };
  return { latency, saturation };
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
  return Math.round(n).toLocaleString('en-US');
}

function latencyPair(run: Run): { p50: number; p99: number } {
  const sorted = [...run.latencies].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
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
  gatewayRssMiB: number | undefined;
}

/** "Other" CPU use during a run from which its numbers are marked as contended. */
const CONTENDED_CPUS = 0.3;

function fmtCpus(n: number | undefined): string {
  return n === undefined ? 'n/a' : n.toFixed(2);
}

function report(results: ScenarioResult[], info: RunInfo): string {
  const out: string[] = [];
  const ncpu = os.cpus().length;
  out.push(`# opinference benchmark`, '');
  out.push(`Run ${info.started.toISOString()} (${info.elapsedS.toFixed(0)} s) with \`npm run bench\`.`, '');
  out.push('## Machine', '', ...machine(), '');
  out.push(
    `The load generator (autocannon, inside the bench process), the zero-latency upstream (one Node process) and the gateway (one Node process) all share these ${ncpu} CPUs. ` +
      'Direct runs need two of those processes, gateway runs all three, so the gateway competes with the load generator and the upstream for CPU time.',
    '',
  );
  if (info.background !== undefined) {
    const busy = info.background >= 0.2;
    out.push(`CPUs busy with other work just before the run: ${fmtCpus(info.background)} of ${ncpu}${busy ? ' — **the machine was not idle; these numbers understate what it can do**' : ''}.`, '');
  }
  out.push('## Settings', '');
  out.push(`- Latency: 1 connection, requests back to back for ${SETTINGS.latencySeconds} s per target; p50/p99 of the full response time (streams: until the last byte), in ms, from autocannon's per-response timings (its own histogram keeps whole ms only).`);
  out.push(`- Saturation: ${SETTINGS.connections} connections for ${SETTINGS.saturationSeconds} s per target; 2xx responses per second.`);
  out.push(`- Warm-up: ${SETTINGS.warmupSeconds} s before each measured run. Every response body is checked (a complete JSON with usage, or a stream ending in \`data: [DONE]\`).`);
  out.push('- Direct: the load generator calls the upstream itself. Gateway: the same request through `POST /v1/chat/completions` of the built gateway (`OP_LOG_LEVEL=warn`, generation records written to SQLite).');
  const cli = relative(ROOT, CLI) || CLI;
  if (cli !== join('dist', 'src', 'cli.js') || GATEWAY_NODE_ARGS.length) out.push(`- Gateway command: \`node ${[...GATEWAY_NODE_ARGS, CLI].join(' ')} serve\`.`);
  out.push('');
  let flagged = false;
  const flag = (run: Run): string => {
    if (run.cpu?.other === undefined || run.cpu.other < CONTENDED_CPUS) return '';
    flagged = true;
    return ' ⚠';
  };
  out.push('## Results', '');
  out.push('| scenario | direct p50 / p99 (ms) | gateway p50 / p99 (ms) | added p50 / p99 (ms) | direct rps | gateway rps | gateway / direct |');
  out.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const r of results) {
    const d = latencyPair(r.direct.latency);
    const g = latencyPair(r.gateway.latency);
    const ratio = r.gateway.saturation.rps / r.direct.saturation.rps;
    const dl = flag(r.direct.latency);
    const gl = flag(r.gateway.latency);
    const ds = flag(r.direct.saturation);
    const gs = flag(r.gateway.saturation);
    out.push(
      `| ${r.scenario.name} | ${fmtMs(d.p50)} / ${fmtMs(d.p99)}${dl} | ${fmtMs(g.p50)} / ${fmtMs(g.p99)}${gl} | ${fmtSigned(g.p50 - d.p50)} / ${fmtSigned(g.p99 - d.p99)}${dl || gl} | ` +
        `${fmtInt(r.direct.saturation.rps)}${ds} | ${fmtInt(r.gateway.saturation.rps)}${gs} | ${(ratio * 100).toFixed(0)}%${ds || gs} |`,
    );
  }
  if (flagged) out.push('', `⚠ measured while other work on the machine used ${CONTENDED_CPUS} CPUs or more (see "other" below): that number is less reliable.`);
  out.push('', '## Details', '');
  out.push('| scenario | target | run | 2xx/s | not 2xx | autocannon p50 / p99 / mean (ms) | CPUs: load gen / upstream / gateway / other | gateway CPU µs per request |');
  out.push('| --- | --- | --- | ---: | ---: | ---: | --- | ---: |');
  const problems: string[] = [];
  for (const r of results) {
    for (const kind of ['direct', 'gateway'] as const) {
      for (const phase of ['latency', 'saturation'] as const) {
        const run = r[kind][phase];
        const res = run.result;
        const bad = res.non2xx + res.errors + res.timeouts + res.mismatches;
        if (bad > 0) problems.push(`${r.scenario.id} ${kind} ${phase}: non-2xx ${res.non2xx}, errors ${res.errors}, timeouts ${res.timeouts}, body mismatches ${res.mismatches}`);
        const c = run.cpu;
        const cpu = c ? `${fmtCpus(c.loadgen)} / ${fmtCpus(c.upstream)} / ${kind === 'gateway' ? fmtCpus(c.gateway) : '—'} / ${fmtCpus(c.other)}` : 'n/a';
        const perReq = kind === 'gateway' && c?.gateway !== undefined && run.rps > 0 ? fmtInt((c.gateway * 1e6) / run.rps) : '—';
        const conns = phase === 'latency' ? '1 conn' : `${SETTINGS.connections} conn`;
        out.push(`| ${r.scenario.name} | ${kind} | ${conns} | ${fmtInt(run.rps)} | ${bad} | ${res.latency.p50} / ${res.latency.p99} / ${res.latency.mean} | ${cpu} | ${perReq} |`);
      }
    }
  }
  out.push(
    '',
    'CPUs: average number of CPUs each used during the measured run (1.00 = one CPU fully busy); "other" is the rest of the machine (other processes, kernel work not charged to these three). ' +
      'Gateway CPU µs per request = gateway CPU time / 2xx responses.',
  );
  out.push('', `Generation records written by the gateway: ${info.records}. Gateway peak RSS: ${info.gatewayRssMiB === undefined ? 'n/a' : `${info.gatewayRssMiB.toFixed(0)} MiB`}.`);
  if (problems.length) out.push('', '**Failed or unexpected responses:**', '', ...problems.map((p) => `- ${p}`));
  out.push('');
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
    cpuUs: median(runs.map((r) => (r.saturation.cpu?.gateway !== undefined && r.saturation.rps > 0 ? (r.saturation.cpu.gateway * 1e6) / r.saturation.rps : Number.NaN))),
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
    const t = targets(scenario, upstream, gateway)[1]!;
    await sanityCheck(scenario, t);
    await autocannonRun(t, SETTINGS.connections, SETTINGS.warmupSeconds);
    const run = await autocannonRun(t, SETTINGS.connections, SETTINGS.saturationSeconds);
    const bad = run.result.non2xx + run.result.errors + run.result.timeouts + run.result.mismatches;
    rows.push(`| ${n} | ${fmtInt(run.rps)} | ${bad} | ${run.result.latency.p50} / ${run.result.latency.p99} |`);
    process.stderr.write(`bench: --workers ${n}: ${fmtInt(run.rps)} 2xx/s\n`);
    await stopChild(gateway.child);
  }
  await stopChild(upstream.child);
  const text = [
    `# serve --workers: throughput (${started.toISOString()})`,
    '',
    ...machine(),
    `- busy CPUs before the run (other work): ${background === undefined ? 'unknown' : background.toFixed(2)}`,
    `- non-streaming chat against the zero-work upstream, ${SETTINGS.connections} connections, ${SETTINGS.saturationSeconds} s; the load generator, the upstream and the gateway share the machine`,
    '',
    '| workers | 2xx/s | not 2xx | autocannon p50 / p99 (ms) |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
  process.stdout.write(`\n${text}`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'workers.md'), text);
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) {
    process.stderr.write(`bench: ${CLI} not found: run npm run build first (npm ci also builds it)\n`);
    process.exitCode = 1;
    return;
  }
  if (process.env.BENCH_WORKERS) return workersComparison(process.env.BENCH_WORKERS.split(',').map((n) => Math.round(Number(n))).filter((n) => n >= 1));
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean);
  const scenarios = only ? SCENARIOS.filter((s) => only.includes(s.id)) : SCENARIOS;
  if (scenarios.length === 0) throw new Error(`BENCH_ONLY matches no scenario; known: ${SCENARIOS.map((s) => s.id).join(', ')}`);

  const started = new Date();
  const background = await backgroundLoad();
  if (background !== undefined && background >= 0.2) {
    process.stderr.write(`bench: warning: ${background.toFixed(2)} CPUs were busy with other work before the run; results will be low\n`);
  }
  tempDir = mkdtempSync(join(os.tmpdir(), 'op-bench-'));
  const upstream = await startUpstream();
  const gateway = await startGateway(tempDir, upstream, scenarios);
  process.stderr.write(`bench: upstream on :${upstream.port}, gateway on ${gateway.origin}\n`);
  const pids = { upstream: upstream.child.pid, gateway: gateway.child.pid };

  const results: ScenarioResult[] = [];
  for (const s of scenarios) {
    const [direct, viaGateway] = targets(s, upstream, gateway) as [Target, Target];
    await sanityCheck(s, direct);
    await sanityCheck(s, viaGateway);
    results.push({ scenario: s, direct: await measureTarget(s, direct, pids), gateway: await measureTarget(s, viaGateway, pids) });
    if (!alive(gateway.child)) throw new Error(`gateway exited during the run; its log:\n${tail(gateway.logFile)}`);
  }

  const gatewayRssMiB = peakRssMiB(gateway.child.pid);

  let tracingText = '';
  const tracingScenarios = results.filter((r) => TRACING_SCENARIOS.includes(r.scenario.id));
  if (process.env.BENCH_TRACING !== '0' && tracingScenarios.length > 0) {
    const sink = await startOtlpSink();
    const tracedDir = join(tempDir, 'traced');
    mkdirSync(tracedDir);
    const traced = await startGateway(tracedDir, upstream, scenarios, [], { OTEL_EXPORTER_OTLP_ENDPOINT: sink.origin, OTEL_SERVICE_NAME: 'opinference-bench', OTEL_TRACES_SAMPLER: 'always_on', OTEL_METRIC_EXPORT_INTERVAL: '5000' });
    const tracedPids = { upstream: upstream.child.pid, gateway: traced.child.pid };
    const tracing: TracingResult[] = [];
    const rounds = Math.round(envNumber('BENCH_TRACING_ROUNDS', 3));
    for (const r of tracingScenarios) {
      const viaPlain = targets(r.scenario, upstream, gateway)[1]!;
      const viaTraced = targets(r.scenario, upstream, traced)[1]!;
      await sanityCheck(r.scenario, viaTraced);
      const result: TracingResult = { scenario: r.scenario, off: [], on: [] };
      for (let i = 0; i < rounds; i++) {
        result.off.push(await measureTarget(r.scenario, viaPlain, pids));
        result.on.push(await measureTarget(r.scenario, viaTraced, tracedPids));
      }
      tracing.push(result);
    }
    await stopChild(traced.child);
    tracingText = tracingReport(tracing, sink.spans());
    await sink.close();
  }
  await stopChild(gateway.child);
  const records = countRecords(gateway.dbFile);
  const logTail = tail(gateway.logFile, 5);
  await stopChild(upstream.child);

  const elapsed = (Date.now() - started.getTime()) / 1000;
  const text = report(results, { started, elapsedS: elapsed, background, records, gatewayRssMiB }) + (tracingText ? `\n${tracingText}` : '');
  process.stdout.write(`\n${text}`);
  if (logTail && logTail !== '(no log)') process.stderr.write(`bench: last gateway log lines:\n${logTail}\n`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(join(RESULTS_DIR, 'latest.md'), text);
  process.stderr.write(`bench: wrote ${join('bench', 'results', 'latest.md')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  activeRun?.stop();
  process.exit(1); // the 'exit' handler kills the children and removes the temp dir
});
