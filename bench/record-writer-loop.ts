/**
 * How long one flush of the record writer holds the event loop (`npx tsx bench/record-writer-loop.ts`).
 *
 * For batches of BENCH_LOOP_SIZES rows (default 50,200,500,2000), queues that many rows (built
 * like the pipeline's, `generationRow` of a `GenerationDraft`) in a real `GenerationWriter` over a
 * fresh migrated database, then calls `flush()` while a sampler re-arms `setImmediate` and notes
 * the longest gap between two of its turns: the longest stretch the loop was held (by the writer,
 * since nothing else runs). Prints, per size, over BENCH_LOOP_RUNS runs: that longest gap in wall
 * time, in the best run (on a shared machine the OS preempts the process at random, which only
 * lengthens gaps: the best run is the closest to what the writer itself does) and the median; the
 * median of the main thread's CPU time in the longest gap, less the garbage-collection pauses in
 * it (and without subtracting them; the kernel accounts thread CPU time in scheduler ticks, about
 * 4 ms here, so below that it is coarse); the median wall time of the whole flush;
 * and the pieces timed alone (ms for the whole batch): building
 * the rows (`generationRow`, done per response before the writer sees them), the writer's bounds
 * check (`boundRow`), the inserts, the rollups (`applyRollups`) and the commit, each in its own
 * transaction step. On SQLite (better-sqlite3 is synchronous) a piece's wall time is loop time; on
 * PostgreSQL it includes the round trips, during which the loop is free.
 *
 * Environment:
 *   BENCH_LOOP_SIZES  comma-separated batch sizes (default 50,200,500,2000)
 *   BENCH_LOOP_RUNS   runs per size (default 7)
 *   BENCH_LOOP_SLICE  rows per transaction of the writer (`sliceRows`; default: the writer's)
 *   BENCH_LOOP_DATABASE_URL  postgres://… : run on PostgreSQL, in a fresh schema dropped at the end
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { openDatabase, redactDatabaseUrl, type OpenDatabase } from '../src/store/database.js';
import { generationRow } from '../src/store/generation-row.js';
import { GenerationWriter } from '../src/store/generation-writer.js';
import { migrate } from '../src/store/migrations.js';
import { boundRow } from '../src/store/record-guard.js';
import { sqlDialectOf } from '../src/store/sql-dialect.js';
import { applyRollups } from '../src/store/usage-rollup.js';
import type { GenerationsTable } from '../src/store/schema.js';
import { GenerationDraft } from '../src/pipeline/state/generation-draft.js';
import { newGenerationId, randomId } from '../src/util/ids.js';
import { seededRandom } from '../test/helpers/seeded-random.js';

const SIZES = (process.env.BENCH_LOOP_SIZES ?? '50,200,500,2000').split(',').map(Number);
const RUNS = Number(process.env.BENCH_LOOP_RUNS ?? 7);
const PG_URL = process.env.BENCH_LOOP_DATABASE_URL;
const SLICE = process.env.BENCH_LOOP_SLICE ? Number(process.env.BENCH_LOOP_SLICE) : undefined;

const KEYS = ['key_a', 'key_b', 'key_c', 'key_d'];
const MODELS = ['openai/gpt-4o-mini', 'anthropic/claude-haiku', 'local/qwen'];
const TAGS = ['prod', 'batch', 'eval'];

/** A finished draft like the pipeline's: a successful chat with usage, one attempt, 0–2 tags, a session half the time. */
function draft(rand: () => number): GenerationDraft {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const model = pick(MODELS);
  const provider = model.split('/')[0]!;
  const tags = TAGS.filter(() => rand() < 0.3);
  const d = new GenerationDraft(newGenerationId(), `req_${randomId(20)}`, pick(KEYS), 'chat', rand() < 0.5, model, tags, rand() < 0.5 ? `s${Math.floor(rand() * 50)}` : null);
  d.servedModel = model;
  d.provider = provider;
  d.endpoint = `${provider}/${model}`;
  d.upstreamModel = model.split('/')[1]!;
  d.finishReason = 'stop';
  d.nativeFinishReason = 'stop';
  d.usage = { promptTokens: 10 + Math.floor(rand() * 2000), completionTokens: 1 + Math.floor(rand() * 500), reasoningTokens: null, cachedTokens: null, cacheWriteTokens: null, source: 'upstream' } as GenerationDraft['usage'];
  d.costPico = BigInt(Math.floor(rand() * 1e9));
  d.ttftMs = d.streamed ? Math.floor(rand() * 400) : null;
  d.routingReason = 'weighted-random';
  d.attempts.push({ endpoint: d.endpoint, provider, model: d.upstreamModel, status: 200, error_code: null, latency_ms: Math.floor(rand() * 900), reason: 'weighted-random' });
  return d;
}

async function freshDatabase(): Promise<{ store: OpenDatabase; cleanup(): Promise<void> }> {
  if (PG_URL) {
    const schema = `op_bench_loop_${Date.now()}`;
    const admin = openDatabase(PG_URL);
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
    const u = new URL(PG_URL);
    u.searchParams.set('options', `-c search_path=${schema}`);
    const store = openDatabase(u.toString());
    await migrate(store.db);
    return {
      store,
      async cleanup() {
        await store.close();
        await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
        await admin.close();
      },
    };
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'op-loop-bench-'));
  const store = openDatabase(`sqlite:${join(dir, 'records.db')}`);
  await migrate(store.db);
  return {
    store,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;
/**
 * CPU time of the main thread, in ms: Linux's schedstat of the thread (the process's CPU time
 * would add V8's GC and compiler threads); elsewhere the process's.
 */
function mainThreadCpuMs(): number {
  try {
    return Number(readFileSync(SCHEDSTAT, 'latin1').split(' ')[0]) / 1e6;
  } catch {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  }
}

/**
 * Run `fn` while a `setImmediate` sampler runs; of the gaps between two sampler turns, the
 * longest in wall time, the longest in the main thread's CPU time (capped by the gap's wall
 * time: the same without the time the OS gave to other processes), and the longest in CPU time less
 * the garbage-collection pauses inside the gap (the writer's own stretch); and `fn`'s wall time;
 * all in ms.
 */
export async function longestHold(fn: () => Promise<unknown>): Promise<{ maxMs: number; maxCpuMs: number; maxOwnMs: number; wallMs: number }> {
  const gcs: { start: number; end: number }[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  const gaps: { start: number; end: number; cpuMs: number }[] = [];
  let last = performance.now();
  let lastCpu = mainThreadCpuMs();
  let on = true;
  const tick = (): void => {
    const now = performance.now();
    const cpu = mainThreadCpuMs();
    gaps.push({ start: last, end: now, cpuMs: Math.min(now - last, cpu - lastCpu) });
    last = now;
    lastCpu = cpu;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const t0 = performance.now();
  await fn();
  const wallMs = performance.now() - t0;
  on = false;
  await new Promise((r) => setTimeout(r, 5));
  obs.disconnect();
  let maxMs = 0;
  let maxCpuMs = 0;
  let maxOwnMs = 0;
  for (const g of gaps) {
    const gc = gcs.reduce((s, x) => s + Math.max(0, Math.min(g.end, x.end) - Math.max(g.start, x.start)), 0);
    maxMs = Math.max(maxMs, g.end - g.start);
    maxCpuMs = Math.max(maxCpuMs, g.cpuMs);
    maxOwnMs = Math.max(maxOwnMs, g.cpuMs - gc);
  }
  return { maxMs, maxCpuMs, maxOwnMs, wallMs };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (n: number): string => n.toFixed(2);
const silent = { error: () => {}, warn: () => {} };

async function main(): Promise<void> {
  const rand = seededRandom(21);
  const engine = PG_URL ? `PostgreSQL (${redactDatabaseUrl(PG_URL)})` : 'SQLite (WAL, synchronous=NORMAL)';
  console.log(`# Record writer, event-loop hold per flush: ${engine}, Node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`median of ${RUNS} runs; ms\n`);
  console.log(`slice: ${SLICE ?? 'default'} rows per transaction\n`);
  console.log('| rows | longest hold, wall: best run | wall: median | CPU less GC: median | CPU: median | flush wall | generationRow() all | boundRow() all | inserts | rollups | commit |');
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  const { store, cleanup } = await freshDatabase();
  try {
    const writer = new GenerationWriter(store.db, silent, 60_000, 1_000_000);
    if (SLICE !== undefined && 'sliceRows' in writer) (writer as { sliceRows: number }).sliceRows = SLICE;
    // Warm-up: prepared statements, JIT.
    for (let i = 0; i < 1000; i++) writer.enqueue(generationRow(draft(rand), false));
    await writer.flush();
    for (const size of SIZES) {
      const hold: number[] = [];
      const holdCpu: number[] = [];
      const holdOwn: number[] = [];
      const wall: number[] = [];
      const build: number[] = [];
      const bound: number[] = [];
      const ins: number[] = [];
      const roll: number[] = [];
      const commit: number[] = [];
      for (let r = 0; r < RUNS; r++) {
        const drafts = Array.from({ length: size }, () => draft(rand));
        let t = performance.now();
        const rows = drafts.map((d) => generationRow(d, false));
        build.push(performance.now() - t);
        t = performance.now();
        rows.map(boundRow);
        bound.push(performance.now() - t);
        for (const row of rows) writer.enqueue(row);
        const res = await longestHold(() => writer.flush());
        hold.push(res.maxMs);
        holdCpu.push(res.maxCpuMs);
        holdOwn.push(res.maxOwnMs);
        wall.push(res.wallMs);
        // The pieces alone, on rows of the same kind.
        const more: GenerationsTable[] = Array.from({ length: size }, () => generationRow(draft(rand), false));
        const trx = await store.db.startTransaction().execute();
        t = performance.now();
        await sqlDialectOf(trx).insertRows(trx, 'generations', more);
        ins.push(performance.now() - t);
        t = performance.now();
        await applyRollups(trx, more);
        roll.push(performance.now() - t);
        t = performance.now();
        await trx.commit().execute();
        commit.push(performance.now() - t);
      }
      console.log(`| ${size} | ${ms(Math.min(...hold))} | ${ms(median(hold))} | ${ms(median(holdOwn))} | ${ms(median(holdCpu))} | ${ms(median(wall))} | ${ms(median(build))} | ${ms(median(bound))} | ${ms(median(ins))} | ${ms(median(roll))} | ${ms(median(commit))} |`);
    }
  } finally {
    await cleanup();
  }
}

await main();
