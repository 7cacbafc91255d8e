/**
 * CPU profile of the gateway under load, summarised by where the time goes
 * (`npx tsx bench/profile.ts`; docs/performance.md, issue #12).
 *
 * Starts the zero-latency upstream (bench/upstream.ts) and the built gateway
 * (`dist/src/cli.js serve`, or `BENCH_CLI`) with `--cpu-prof`, drives non-streaming or streaming
 * chat at `PROFILE_CONNECTIONS` (32) connections for `PROFILE_SECONDS` (20) with autocannon,
 * stops the gateway (the profile is written at exit) and prints the CPU per request by cost:
 * each sample is charged to the nearest frame of the project or of a package up its stack, so a
 * socket write made by Fastify's reply counts as Fastify's, a `JSON.parse` made by a provider's
 * stream transform as the provider conversion's. The profiler itself adds some 20–30% of CPU:
 * compare profiles with each other, not with the bench's figures.
 *
 * Knobs: `PROFILE_STREAM=1` (streaming), `PROFILE_SECONDS`, `PROFILE_CONNECTIONS`, `BENCH_CLI`,
 * `PROFILE_DIR` (where the .cpuprofile stays; default a temp folder).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { stringify } from 'yaml';

// autocannon (CommonJS, untyped): the subset used here.
type Autocannon = (opts: Record<string, unknown>) => Promise<{ '2xx': number; non2xx: number }>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = process.env.BENCH_CLI ? resolve(process.env.BENCH_CLI) : join(ROOT, 'dist', 'src', 'cli.js');
const STREAM = process.env.PROFILE_STREAM === '1';
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 20);
const CONNECTIONS = Number(process.env.PROFILE_CONNECTIONS ?? 32);
const DIR = process.env.PROFILE_DIR ? resolve(process.env.PROFILE_DIR) : mkdtempSync(join(os.tmpdir(), 'op-profile-'));
mkdirSync(DIR, { recursive: true });

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The cost a frame of the project or of a package stands for. */
function costOf(url: string): string | undefined {
  const nm = url.includes('node_modules/') ? url.split('node_modules/').pop()!.split('/')[0]! : undefined;
  if (nm) {
    if (nm === 'zod') return 'validation (schema, body bounds)';
    if (nm === 'kysely' || nm === 'better-sqlite3') return 'generation record (row, SQLite insert, rollups)';
    if (nm === 'prom-client') return 'metrics';
    if (nm === 'pino' || nm === 'sonic-boom') return 'logging';
    if (nm === 'undici') return 'upstream HTTP client (undici, with its socket writes)';
    if (nm === 'eventsource-parser') return 'SSE parsing and upstream body';
    if (nm === 'fastify' || nm === 'find-my-way' || nm === 'toad-cache' || nm === '@fastify') return 'client HTTP: Fastify routing, hooks, reply (with its socket writes)';
    if (nm === 'gpt-tokenizer') return 'token estimate';
    return `other packages`;
  }
  if (!url.includes('/dist/src/')) return undefined;
  const src = url.split('/dist/src/')[1]!;
  if (src === 'util/compile-zod-parser.js') return 'validation (schema, body bounds)';
  if (/^ingress\/(.*request-schema|validate|body-bounds|.*openrouter-chat-fields|gateway-fields|openai\/openai-request-fields)/.test(src)) return 'validation (schema, body bounds)';
  if (src.startsWith('ingress/')) return 'response encoding (bodies, stream chunks)';
  if (src === 'server/json-body.js') return 'request JSON parse';
  if (src === 'server/auth.js' || src === 'server/route-auth.js' || src === 'store/keys.js') return 'auth (key lookup, hash)';
  if (src.startsWith('server/')) return 'client HTTP: Fastify routing, hooks, reply (with its socket writes)';
  if (src.startsWith('routing/') || src === 'pipeline/stages/plan.js') return 'routing (plan, health)';
  if (src.startsWith('store/') || src === 'pipeline/state/generation-draft.js') return 'generation record (row, SQLite insert, rollups)';
  if (src.startsWith('telemetry/') || ['pipeline/state/keyed-metrics.js', 'pipeline/state/metrics.js', 'pipeline/state/events.js'].includes(src)) return 'metrics';
  if (src.startsWith('providers/')) return 'provider conversion (upstream request; response and chunk parsing)';
  if (src.startsWith('upstream/')) return 'SSE parsing and upstream body';
  if (src.startsWith('accounting/') || src.startsWith('limits/') || src === 'pipeline/stages/admit.js' || src === 'pipeline/stages/finish.js') return 'admission, usage and cost';
  if (src.startsWith('pipeline/')) return 'pipeline stages (attempt loop, relay, response)';
  return 'other gateway code';
}

/** CPU µs per request by cost, largest first. */
export function breakdown(profile: CpuProfile, requests: number): Array<[string, number]> {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const by = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const node = nodes.get(profile.samples[i]!)!;
    const fn = node.callFrame.functionName;
    if (fn === '(idle)') continue;
    let cost: string | undefined;
    if (fn === '(garbage collector)') cost = 'garbage collection';
    else if (fn === '(program)') cost = 'V8 and Node internals (unattributed)';
    else {
      for (let id: number | undefined = node.id; id !== undefined && cost === undefined; id = parent.get(id)) cost = costOf(nodes.get(id)!.callFrame.url);
      cost ??= /modules\/(esm|cjs)|compileSourceTextModule|wrapSafe/.test(`${node.callFrame.url} ${fn}`) ? 'start-up (module loading)' : 'Node event loop, sockets, HTTP parsing';
    }
    by.set(cost, (by.get(cost) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  return [...by].map(([k, v]): [string, number] => [k, v / requests]).sort((a, b) => b[1] - a[1]);
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  const upstream = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'upstream.ts')], { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(upstream);
  const upstreamPort = (JSON.parse(await new Promise<string>((r) => createInterface({ input: upstream.stdout! }).once('line', r))) as { port: number }).port;
  const port = await new Promise<number>((r) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => r(p));
    });
  });
  writeFileSync(join(DIR, 'opinference.yaml'), stringify({
    providers: [{ id: 'up-ok', kind: 'openai', base_url: `http://127.0.0.1:${upstreamPort}/ok/v1` }],
    models: [{ id: 'bench/chat', context_length: 8192, endpoints: [{ provider: 'up-ok', upstream_model: 'm', pricing: { prompt: 1, completion: 2 } }] }],
  }));
  const gateway = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${DIR}`, CLI, 'serve'], {
    stdio: 'inherit',
    env: { ...process.env, OP_CONFIG: join(DIR, 'opinference.yaml'), OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_DATABASE_URL: `sqlite:${join(DIR, 'profile.db')}`, OP_ADMIN_KEY: 'profile-key', OP_LOG_LEVEL: 'warn', NODE_ENV: 'production' },
  });
  children.push(gateway);
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const body = JSON.stringify({ model: 'bench/chat', messages: [{ role: 'user', content: 'hi' }], stream: STREAM });
  process.stderr.write(`profile: ${STREAM ? 'streaming' : 'non-streaming'} chat, ${CONNECTIONS} connections, ${SECONDS} s…\n`);
  const result = await autocannon({ url: `http://127.0.0.1:${port}/v1/chat/completions`, method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer profile-key' }, body, connections: CONNECTIONS, duration: SECONDS });
  gateway.kill('SIGTERM');
  await new Promise((r) => gateway.once('exit', r));
  upstream.kill();
  const file = readdirSync(DIR).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile in ${DIR}`);
  const requests = result['2xx'];
  const rows = breakdown(JSON.parse(readFileSync(join(DIR, file), 'utf8')) as CpuProfile, requests);
  const total = rows.reduce((s, [, v]) => s + v, 0);
  console.log(`${requests} requests (${result.non2xx} not 2xx); gateway CPU ${total.toFixed(0)} µs per request with the profiler on; profile: ${join(DIR, file)}\n`);
  console.log('| cost | µs per request | share |\n| --- | ---: | ---: |');
  for (const [k, v] of rows) if (v >= 0.5) console.log(`| ${k} | ${v.toFixed(1)} | ${((100 * v) / total).toFixed(0)}% |`);
  process.exit(0);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
