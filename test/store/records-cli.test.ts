/**
 * Records survive what an operator's machine does to the gateway process (the CLI, as run in
 * production): SIGKILL in the middle of a burst loses at most the records answered in the last
 * `records.flush_interval_ms`, or two batch writes when writes are slower (24 clients, and 50 on
 * SQLite and on PostgreSQL; none with `records.durability: strict`); a deleted database file
 * turns /ready 503 with an error log line; a log destination that cannot be written (a full
 * disk: /dev/full) neither stops requests nor SIGTERM.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { randomId } from '../../src/util/ids.js';
import { freePort } from '../helpers/free-port.js';
import { CLI, spawnCli, untilHealthy } from '../helpers/cli-process.js';

const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';
/** The PostgreSQL server of the kill test on PostgreSQL (each run is a fresh schema of it). */
const PG_URL = process.env.OP_TEST_DATABASE_URL || undefined;


const completion = { json: { id: 'u', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } } };

interface Served {
  child: ChildProcess;
  port: number;
  logs: () => string;
  exited: Promise<number | null>;
}

describe('records across process failures (CLI)', { skip }, () => {
  let dir: string;
  let upstream: Upstream;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-records-cli-'));
    upstream = await startUpstream();
    upstream.setDefault(completion);
  });
  after(async () => {
    await upstream?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function serve(name: string, records: string, stdout: 'pipe' | number = 'pipe', databaseUrl = `sqlite:${join(dir, `${name}.db`)}`): Promise<Served> {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, `${records}providers:\n  - id: up\n    kind: openai\n    base_url: ${upstream.url}\nmodels:\n  - id: test/model\n    context_length: 8192\n    endpoints:\n      - provider: up\n        upstream_model: m\n        pricing: { prompt: 1, completion: 2 }\n`);
    const port = await freePort();
    const env = { ...process.env, OP_CONFIG: file, OP_DATABASE_URL: databaseUrl, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_ADMIN_KEY: 'adm', OP_LOG_LEVEL: process.env.OP_LOG_LEVEL ?? 'info' };
    const { child, logs, exited } = spawnCli(['serve'], env, name, stdout);
    await untilHealthy(port, 200, 50);
    return { child, port, logs, exited };
  }

  /**
   * A fresh database for one gateway: a SQLite file in `dir`, or a schema of {@link PG_URL}.
   * `ids()` reads the generation ids it holds; `drop()` deletes a PostgreSQL schema.
   */
  async function database(name: string, engine: 'sqlite' | 'postgres') {
    if (engine === 'sqlite') {
      const file = join(dir, `${name}.db`);
      const ids = () => {
        const db = new SQLite(file, { readonly: true });
        try {
          return new Set((db.prepare('SELECT id FROM generations').all() as { id: string }[]).map((r) => r.id));
        } finally {
          db.close();
        }
      };
      return { url: `sqlite:${file}`, ids: async () => ids(), drop: async () => {} };
    }
    const schema = `op_test_${process.pid}_${randomId(10).toLowerCase()}`;
    const admin = async <T,>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        return await fn(c);
      } finally {
        await c.end();
      }
    };
    await admin((c) => c.query(`create schema "${schema}"`));
    const url = new URL(PG_URL!);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return {
      url: url.toString(),
      ids: () => admin(async (c) => new Set((await c.query<{ id: string }>(`SELECT id FROM "${schema}".generations`)).rows.map((r) => r.id))),
      drop: () => admin((c) => c.query(`drop schema if exists "${schema}" cascade`)).then(() => undefined),
    };
  }

  /**
   * `clients` clients send requests (one in four streamed) as fast as they are answered for
   * `ms`, then the gateway gets SIGKILL. Returns each 200's generation id with when its answer
   * was complete at the client (ms before the kill), and those of them not found in the
   * database afterwards.
   */
  async function burstThenKill(name: string, records: string, ms: number, clients = 24, engine: 'sqlite' | 'postgres' = 'sqlite', midBurst?: (port: number) => Promise<void>, beforeKill?: (port: number) => Promise<void>) {
    const store = await database(name, engine);
    try {
      const s = await serve(name, records, 'pipe', store.url);
      const answered: { id: string; at: number }[] = [];
      let stop = false;
      const client = async (n: number) => {
        for (let i = 0; !stop; i++) {
          const streamed = (n + i) % 4 === 0;
          try {
            const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', stream: streamed, messages: [{ role: 'user', content: `hi ${n} ${i}` }] }) });
            const text = await res.text();
            // A complete answer: the whole JSON body, or a stream through its [DONE].
            if (res.status === 200 && (!streamed || text.endsWith('data: [DONE]\n\n'))) answered.push({ id: res.headers.get('x-op-generation-id')!, at: Date.now() });
          } catch {
            return; // the process is gone
          }
        }
      };
      const running = Array.from({ length: clients }, (_, n) => client(n));
      await new Promise((r) => setTimeout(r, ms / 2));
      await midBurst?.(s.port);
      await new Promise((r) => setTimeout(r, ms / 2));
      await beforeKill?.(s.port);
      const killedAt = Date.now();
      s.child.kill('SIGKILL');
      stop = true;
      await s.exited;
      await Promise.all(running);
      const ids = await store.ids();
      // Answers read after the kill were sent before it too: they count (with `before` <= 0).
      const answers = answered.map((a) => ({ id: a.id, before: killedAt - a.at }));
      const lost = answers.filter((a) => !ids.has(a.id));
      return { answers, lost };
    } finally {
      await store.drop();
    }
  }

  /** The `# …` line of a kill run: answers, those without a row, the oldest of them. */
  function lossLine(label: string, answers: readonly { before: number }[], lost: readonly { before: number }[]): string {
    return `# ${label}: ${answers.length} answered 200, ${lost.length} without a row (${((100 * lost.length) / answers.length).toFixed(2)} %), ${lost.length ? `the oldest of them answered ${Math.max(...lost.map((l) => l.before))} ms before the kill` : 'none'}\n`;
  }

  test('SIGKILL mid-burst, default durability: every answer older than records.flush_interval_ms has its row', async () => {
    const { answers, lost } = await burstThenKill('kill-batched', '', 1_500);
    const window = 200; // the documented default of records.flush_interval_ms
    process.stdout.write(lossLine('batched', answers, lost));
    assert.ok(answers.length > 40, `only ${answers.length} answers in the burst`);
    assert.deepEqual(lost.filter((l) => l.before > window), []);
  });

  /** The cumulative buckets of a histogram of the gateway's /metrics, bounds in ms. */
  async function histogram(port: number, name: string): Promise<{ le: number; n: number }[]> {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return [...text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)$`, 'gm'))].map((m) => ({ le: 1000 * Number(m[1]), n: Number(m[2]) }));
  }
  /** Observations of `later` (a histogram scraped after `earlier`) made since `earlier`, above the first bucket bound >= `ms`. */
  function observedAbove(earlier: { le: number; n: number }[], later: { le: number; n: number }[], ms: number): number {
    const at = later.findIndex((b) => b.le >= ms);
    return later.at(-1)!.n - (earlier.at(-1)?.n ?? 0) - (later[at]!.n - (earlier[at]?.n ?? 0));
  }

  // The documented bound (docs/records.md): each answer's record is committed within
  // records.flush_interval_ms, or within two batch writes when one write takes longer than half
  // of it (a PostgreSQL or a disk slowed down by load). The gateway times its writes.
  for (const engine of ['sqlite', 'postgres'] as const) {
    const pgSkip = engine === 'postgres' && !PG_URL ? 'set OP_TEST_DATABASE_URL to run it on PostgreSQL' : false;
    test(`SIGKILL at 50 concurrent clients, default durability, ${engine}: every answer older than the documented bound has its row`, { skip: pgSkip }, async () => {
      let lagMid: { le: number; n: number }[] = [];
      let lagEnd: { le: number; n: number }[] = [];
      let writes: { le: number; n: number }[] = [];
      const { answers, lost } = await burstThenKill(`kill-c50-${engine}`, '', 4_000, 50, engine, async (port) => {
        lagMid = await histogram(port, 'opinference_records_commit_lag_seconds');
      }, async (port) => {
        writes = await histogram(port, 'opinference_record_write_seconds');
        lagEnd = await histogram(port, 'opinference_records_commit_lag_seconds');
      });
      const window = 200; // the documented default of records.flush_interval_ms
      const written = writes.at(-1)!.n;
      const longest = writes.find((b) => b.n === written)!.le; // the upper bound of its bucket
      const bound = Math.max(window, 2 * longest);
      // The gateway's own clock, which a client slowed down by the same load cannot give: batches
      // of the burst's second half whose oldest record waited longer than the bound.
      const late = observedAbove(lagMid, lagEnd, bound);
      process.stdout.write(`${lossLine(`batched, c=50, ${engine}`, answers, lost).trimEnd()}; ${written} batch writes, the longest at most ${longest} ms; bound ${bound} ms; ${lagEnd.at(-1)!.n - (lagMid.at(-1)?.n ?? 0)} batches in the second half, ${late} committed later than the bound\n`);
      assert.ok(answers.length > 100, `only ${answers.length} answers in the burst`);
      assert.ok(written > 0, 'no batch was written during the burst');
      assert.deepEqual(lost.filter((l) => l.before > bound), []);
      assert.equal(late, 0);
    });
  }

  test('SIGKILL mid-burst, records.durability strict: every answer has its row', async () => {
    const { answers, lost } = await burstThenKill('kill-strict', 'records: { durability: strict }\n', 1_500);
    process.stdout.write(lossLine('strict', answers, lost));
    assert.ok(answers.length > 40, `only ${answers.length} answers in the burst`);
    assert.deepEqual(lost, []);
  });

  test('the database file deleted while serving: /ready 503 and an error log line, within seconds', async () => {
    const s = await serve('deleted', '');
    try {
      assert.equal((await fetch(`http://127.0.0.1:${s.port}/ready`)).status, 200);
      unlinkSync(join(dir, 'deleted.db'));
      let ready: Response | undefined;
      for (let i = 0; i < 100; i++) {
        ready = await fetch(`http://127.0.0.1:${s.port}/ready`);
        if (ready.status === 503) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(ready!.status, 503);
      assert.match(((await ready!.json()) as { reason: string }).reason, /database file .*deleted\.db was deleted/);
      const findLine = () => s.logs().split('\n').find((l) => l.includes('was deleted while the gateway runs'));
      for (let i = 0; i < 100 && !findLine(); i++) await new Promise((r) => setTimeout(r, 20));
      const line = findLine();
      assert.ok(line, s.logs());
      assert.equal((JSON.parse(line) as { level: number }).level, 50);
      const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
      assert.match(metrics, /opinference_records_writable 0\n/);
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  test('a log reader that stops reading (stdout a full pipe): requests and /health keep being answered, SIGTERM exits promptly', async () => {
    const s = await serve('stuckpipe', '');
    s.child.stdout!.pause();
    try {
      let answered = 0;
      await Promise.all(Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 80; i++) {
          const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x'.repeat(2_000) }] }), signal: AbortSignal.timeout(5_000) });
          assert.equal(res.status, 200);
          await res.arrayBuffer();
          answered++;
        }
      }));
      // Each answer logs two lines: far more than a pipe holds once nobody reads it.
      assert.equal(answered, 640);
      const health = await fetch(`http://127.0.0.1:${s.port}/health`, { signal: AbortSignal.timeout(2_000) });
      assert.equal(health.status, 200);
      const t0 = Date.now();
      s.child.kill('SIGTERM');
      const code = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r('still running 5 s after SIGTERM'), 5_000))]);
      assert.equal(code, 0);
      process.stdout.write(`# stuck log pipe: ${answered} answers, exit ${Date.now() - t0} ms after SIGTERM\n`);
      const db = new SQLite(join(dir, 'stuckpipe.db'), { readonly: true });
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM generations').get() as { n: number }).n, answered);
      db.close();
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });

  test('logs to a full disk (/dev/full): requests are answered, records written, SIGTERM exits promptly', { skip: existsSync('/dev/full') ? false : 'no /dev/full' }, async () => {
    const full = openSync('/dev/full', 'w');
    const s = await serve('fulllog', '', full);
    closeSync(full);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://127.0.0.1:${s.port}/v1/chat/completions`, { method: 'POST', headers: { authorization: 'Bearer adm', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'x' }] }) });
        assert.equal(res.status, 200);
        ids.push(res.headers.get('x-op-generation-id')!);
      }
      s.child.kill('SIGTERM');
      const code = await Promise.race([s.exited, new Promise((r) => setTimeout(() => r('still running 5 s after SIGTERM'), 5_000))]);
      assert.equal(code, 0);
      const db = new SQLite(join(dir, 'fulllog.db'), { readonly: true });
      const n = (db.prepare('SELECT COUNT(*) AS n FROM generations').get() as { n: number }).n;
      db.close();
      assert.equal(n, 20);
    } finally {
      if (s.child.exitCode === null) s.child.kill('SIGKILL');
    }
  });
});
