/**
 * CPU cost of writing generation records (`npx tsx bench/record-writer.ts`).
 *
 * Builds rows the way the pipeline does (a `GenerationDraft` per request, `generationRow` of
 * store/generation-row.ts), then writes them through the real `GenerationWriter` (the inserts,
 * the hourly and daily rollups, the session counts and the tag index, one transaction per batch)
 * into a fresh, migrated database, and
 * prints the CPU time of this process per row (`process.cpuUsage`, user + system, µs) and the wall
 * time per row. It also times the pieces alone: `generationRow()`, and the writer's bounds check
 * (`boundRow`). On PostgreSQL the figure is the gateway's side only (the server's CPU is another
 * process).
 *
 * Each run writes BENCH_RECORDS_ROWS rows in batches of BENCH_RECORDS_BATCH (what the writer
 * takes from its queue under load), after a warm-up of the same size, and reports the median of
 * BENCH_RECORDS_RUNS runs. The id comparison writes random generation ids (`gen_<24 random>`,
 * what the gateway made before) and time-ordered ones (`newGenerationId`: `gen_<8 time><16
 * random>`) into tables already holding BENCH_RECORDS_PREFILL rows, to show what the
 * primary-key indexes (`generations`, `generation_tags`) cost when inserts land at random places.
 *
 * Environment:
 *   BENCH_RECORDS_ROWS     rows per run (default 20000)
 *   BENCH_RECORDS_BATCH    rows per writer batch (default 200)
 *   BENCH_RECORDS_RUNS     runs (default 5)
 *   BENCH_RECORDS_PREFILL  rows written before the id comparison (default 200000; 0 skips it)
 *   BENCH_RECORDS_PRAGMA   SQLite pragmas to set first, `;`-separated (experiments)
 *   BENCH_RECORDS_DATABASE_URL  postgres://… : run on PostgreSQL, in fresh schemas
 *                          `op_bench_records_<time>_<n>`, dropped at the end
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { openDatabase, redactDatabaseUrl, type OpenDatabase } from '../src/store/database.js';
import { generationRow } from '../src/store/generation-row.js';
import { GenerationWriter } from '../src/store/generation-writer.js';
import { migrate } from '../src/store/migrations.js';
import { boundRow } from '../src/store/record-guard.js';
import type { GenerationsTable } from '../src/store/schema.js';
import { GenerationDraft } from '../src/pipeline/state/generation-draft.js';
import { newGenerationId, randomId } from '../src/util/ids.js';
import { seededRandom } from '../test/helpers/seeded-random.js';

const ROWS = Number(process.env.BENCH_RECORDS_ROWS ?? 20_000);
const BATCH = Number(process.env.BENCH_RECORDS_BATCH ?? 200);
const RUNS = Number(process.env.BENCH_RECORDS_RUNS ?? 5);
const PREFILL = Number(process.env.BENCH_RECORDS_PREFILL ?? 200_000);
const PG_URL = process.env.BENCH_RECORDS_DATABASE_URL;

const KEYS = ['key_a', 'key_b', 'key_c', 'key_d'];
const MODELS = ['openai/gpt-4o-mini', 'anthropic/claude-haiku', 'local/qwen'];
const TAGS = ['prod', 'batch', 'eval'];

/** A generation id as the gateway made them before time-ordered ids: 24 random base62 characters. */
const randomGenerationId = (): string => `gen_${randomId(24)}`;

/** A finished draft like the pipeline's: a successful chat with usage, one attempt, 0–2 tags, a session half the time. */
function draft(rand: () => number, id: string): GenerationDraft {
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;
  const model = pick(MODELS);
  const provider = model.split('/')[0]!;
  const tags = TAGS.filter(() => rand() < 0.3);
  const d = new GenerationDraft(id, `req_${randomId(20)}`, pick(KEYS), 'chat', rand() < 0.5, model, tags, rand() < 0.5 ? `s${Math.floor(rand() * 50)}` : null);
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

/** A fresh migrated database: a SQLite file in a temporary directory, or a PostgreSQL schema. */
async function freshDatabase(n: number): Promise<{ store: OpenDatabase; cleanup(): Promise<void> }> {
  if (PG_URL) {
    const schema = `op_bench_records_${Date.now()}_${n}`;
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
  const dir = mkdtempSync(join(os.tmpdir(), 'op-records-bench-'));
  const store = openDatabase(`sqlite:${join(dir, 'records.db')}`);
  await migrate(store.db);
  // Experiments: e.g. BENCH_RECORDS_PRAGMA='wal_autocheckpoint=100000;cache_size=-65536'.
  for (const p of (process.env.BENCH_RECORDS_PRAGMA ?? '').split(';').filter(Boolean)) await sql.raw(`PRAGMA ${p}`).execute(store.db);
  return {
    store,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const silent = { error: () => {}, warn: () => {} };

/** Write `rows` through a writer in batches of {@link BATCH}; CPU and wall µs per row. */
async function writeAll(writer: GenerationWriter, rows: readonly GenerationsTable[]): Promise<{ cpu: number; sys: number; wall: number }> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += BATCH) {
    for (let j = i; j < Math.min(i + BATCH, rows.length); j++) writer.enqueue(rows[j]!);
    await writer.flush();
  }
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / rows.length, sys: c.system / rows.length, wall: ((performance.now() - t0) * 1000) / rows.length };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const us = (n: number): string => n.toFixed(1);

/** CPU µs per call of `fn` over `items`. */
function cpuPer<T>(items: readonly T[], fn: (x: T) => unknown): number {
  let sink = 0;
  const c0 = process.cpuUsage();
  for (const x of items) if (fn(x)) sink++;
  const c = process.cpuUsage(c0);
  if (sink < 0) console.log(sink);
  return (c.user + c.system) / items.length;
}

async function main(): Promise<void> {
  const rand = seededRandom(12);
  const engine = PG_URL ? `PostgreSQL (${redactDatabaseUrl(PG_URL)})` : 'SQLite (WAL, synchronous=NORMAL)';
  console.log(`# Record writer: ${engine}, Node ${process.version}, ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(`${ROWS} rows per run, batches of ${BATCH}, median of ${RUNS} runs\n`);

  const drafts = Array.from({ length: ROWS }, () => draft(rand, newGenerationId()));
  cpuPer(drafts, (d) => generationRow(d, false));
  const rowUs = median(Array.from({ length: RUNS }, () => cpuPer(drafts, (d) => generationRow(d, false))));
  const sample = drafts.map((d) => generationRow(d, false));
  cpuPer(sample, boundRow);
  const bound = median(Array.from({ length: RUNS }, () => cpuPer(sample, boundRow)));
  console.log(`| step | CPU µs/row |\n| --- | ---: |\n| generationRow() | ${us(rowUs)} |\n| boundRow() | ${us(bound)} |\n`);

  const { store, cleanup } = await freshDatabase(0);
  try {
    const writer = new GenerationWriter(store.db, silent, 60_000, 100_000);
    await writeAll(writer, Array.from({ length: ROWS }, () => generationRow(draft(rand, newGenerationId()), false)));
    const cpu: number[] = [];
    const sys: number[] = [];
    const wall: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const res = await writeAll(writer, Array.from({ length: ROWS }, () => generationRow(draft(rand, newGenerationId()), false)));
      cpu.push(res.cpu);
      sys.push(res.sys);
      wall.push(res.wall);
    }
    console.log(`| GenerationWriter (insert + rollups + tags, per row) | CPU µs/row | of which system | wall µs/row |\n| --- | ---: | ---: | ---: |`);
    console.log(`| median | ${us(median(cpu))} | ${us(median(sys))} | ${us(median(wall))} |\n| runs | ${cpu.map(us).join(' ')} | ${sys.map(us).join(' ')} | ${wall.map(us).join(' ')} |\n`);
  } finally {
    await cleanup();
  }

  if (PREFILL > 0) {
    console.log(`| ids (table prefilled with ${PREFILL} rows of the same kind) | CPU µs/row | wall µs/row |\n| --- | ---: | ---: |`);
    let n = 1;
    for (const [name, makeId] of [['random (gen_<24 random>, before)', randomGenerationId], ['time-ordered (gen_<8 time><16 random>, newGenerationId)', newGenerationId]] as const) {
      const { store: s, cleanup: done } = await freshDatabase(n++);
      try {
        const writer = new GenerationWriter(s.db, silent, 60_000, 100_000);
        for (let i = 0; i < PREFILL; i += ROWS) await writeAll(writer, Array.from({ length: Math.min(ROWS, PREFILL - i) }, () => generationRow(draft(rand, makeId()), false)));
        const res: { cpu: number; wall: number }[] = [];
        for (let r = 0; r < RUNS; r++) res.push(await writeAll(writer, Array.from({ length: ROWS }, () => generationRow(draft(rand, makeId()), false))));
        console.log(`| ${name} | ${us(median(res.map((x) => x.cpu)))} | ${us(median(res.map((x) => x.wall)))} |`);
      } finally {
        await done();
      }
    }
  }
}

await main();
