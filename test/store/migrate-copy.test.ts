/**
 * `opinference migrate --from … --to …`: a SQLite deployment copied into the test database
 * (PostgreSQL under `npm run test:pg`, another SQLite file otherwise) holds exactly the same rows
 * (picodollar sums beyond 2^53 included) and answers usage queries identically; a second copy is
 * refused with a clear message, `--resume` completes an interrupted one without duplicates.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql, type Kysely } from 'kysely';
import { COPY_TABLES, copyDatabase, TargetNotEmptyError } from '../../src/store/copy-database.js';
import { openDatabase, type OpenDatabase } from '../../src/store/database.js';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import type { Database, GenerationsTable } from '../../src/store/schema.js';
import { queryUsage } from '../../src/store/usage-queries.js';
import { seededRandom } from '../helpers/seeded-random.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.js';
import { CLI } from '../helpers/cli-process.js';

const run = promisify(execFile);
const HOUR = 3_600_000;
const B = Date.UTC(2025, 4, 1);
const BIG = 2n ** 59n + 7n; // one generation's cost beyond 2^53 picodollars (under the record guard's USD 1M cap): exact only as text

function makeRow(n: number, rand: () => number): GenerationsTable {
  const tags = [['a'], ['a', 'b'], [], ['c']][n % 4]!;
  return {
    id: `gen_${String(n).padStart(5, '0')}`,
    request_id: `req_${n}`,
    created_at: B + Math.floor(rand() * 3 * 24 * HOUR),
    key_id: [null, 'key_x', 'key_y'][n % 3]!,
    requested_model: `m${n % 3}`,
    served_model: n % 7 === 0 ? null : `m${n % 3}`,
    provider: n % 7 === 0 ? null : `p${n % 2}`,
    endpoint: null,
    upstream_model: null,
    status: n % 7 === 0 ? 'error' : 'success',
    error_code: null,
    error_message: n % 7 === 0 ? `failure ${n}` : null,
    http_status: n % 7 === 0 ? 502 : 200,
    finish_reason: 'stop',
    native_finish_reason: 'stop',
    api: 'chat',
    streamed: n % 2,
    cancelled: 0,
    prompt_tokens: 10 + n,
    completion_tokens: 5,
    reasoning_tokens: null,
    cached_tokens: n % 5 === 0 ? 3 : null,
    cache_write_tokens: null,
    usage_source: 'upstream',
    cost_pico: n === 3 ? BIG : BigInt(1_000_000 + n),
    latency_ms: Math.floor(rand() * 5000),
    ttft_ms: n % 2 ? Math.floor(rand() * 500) : null,
    tags: JSON.stringify(tags),
    session: n % 3 === 0 ? `s${n % 11}` : null,
    retention: n % 4 === 0 ? '30' : 'none',
    detail: JSON.stringify({ attempts: [], n }),
    content: n % 4 === 0 ? JSON.stringify({ request: { messages: [{ role: 'user', content: `q${n}` }] } }) : null,
  };
}

/** Every row of every table, in primary-key order, money as text: comparable across engines. */
async function dump(db: Kysely<Database>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const { table, key } of COPY_TABLES) {
    let q = db.selectFrom(table as 'generations').selectAll();
    if (table !== 'api_keys' && table !== 'teams' && table !== 'stored_responses' && !table.startsWith('usage_daily_session') && table !== 'generation_tags' && !table.startsWith('batch')) q = q.select(sql<string>`cast(cost_pico as text)`.as('cost_pico'));
    for (const c of key) q = q.orderBy(sql.ref(c));
    out[table] = (await q.execute()).map((r) => JSON.stringify(r));
  }
  return out;
}

describe('migrate --from --to (copy a deployment)', () => {
  let dir: string;
  let sourceUrl: string;
  let source: OpenDatabase;
  let target: TestDatabase;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'op-copy-'));
    sourceUrl = `sqlite:${join(dir, 'source.db')}`;
    source = openDatabase(sourceUrl);
    await migrate(source.db);
    const rand = seededRandom(7);
    const writer = new GenerationWriter(source.db, { error: (o, m) => assert.fail(`${m} ${JSON.stringify(o)}`) }, 1_000_000, Number.MAX_SAFE_INTEGER);
    for (let n = 0; n < 250; n++) writer.enqueue(makeRow(n, rand));
    await writer.flush();
    await createKey(source.db, 'alice', null, { limit: '5', rate_limit: { requests_per_minute: 10, tokens_per_minute: null } });
    await createKey(source.db, 'bob');
    target = await createTestDatabase('target.db');
  });
  after(async () => {
    await source?.close();
    await target?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('every row arrives, money exact; usage answers match; a second copy is refused; --resume completes one', async () => {
    const to = target.open();
    try {
      const progress: string[] = [];
      // Small pages: several per table, and keyset paging over composite keys.
      const copied = await copyDatabase(source.db, to.db, { batchSize: 37, onProgress: (t, n, total) => progress.push(`${t} ${n}/${total}`) });
      assert.equal(copied.generations, 250);
      assert.equal(copied.api_keys, 2);
      assert.ok(progress.includes('generations 250/250'), progress.join(', '));
      const want = await dump(source.db);
      assert.deepEqual(await dump(to.db), want);
      const big = await to.db.selectFrom('generations').select(sql<string>`cast(cost_pico as text)`.as('c')).where('id', '=', 'gen_00003').executeTakeFirstOrThrow();
      assert.equal(big.c, String(BIG));
      for (const groupBy of [null, 'model', 'tag', 'session'] as const) {
        const q = { from: B - HOUR, to: B + 4 * 24 * HOUR, bucket: 'day' as const, groupBy };
        assert.deepEqual(await queryUsage(to.db, q), await queryUsage(source.db, q), String(groupBy));
      }

      await assert.rejects(copyDatabase(source.db, to.db), (err: unknown) => err instanceof TargetNotEmptyError && /already holds data \(2 in api_keys, 250 in generations/.test(err.message) && /--resume/.test(err.message));

      // An interrupted copy: part of the generations and none of the rest; --resume completes it.
      for (const { table } of [...COPY_TABLES].reverse()) if (table !== 'api_keys') await to.db.deleteFrom(table as 'generations').execute();
      await source.db.insertInto('generations').values(makeRow(999, seededRandom(1))).execute();
      const again = await copyDatabase(source.db, to.db, { resume: true, batchSize: 100 });
      assert.equal(again.generations, 251);
      assert.deepEqual(await dump(to.db), await dump(source.db));
    } finally {
      await to.close();
    }
  });

  test('the CLI: copies, refuses a non-empty target with the reason, refuses a missing source file', { skip: existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build' }, async () => {
    const other = await createTestDatabase('cli-target.db');
    try {
      const env = { ...process.env, OP_LOG_LEVEL: 'error' };
      const first = await run(process.execPath, [CLI, 'migrate', '--from', sourceUrl, '--to', other.url], { env });
      assert.match(first.stdout, /^generations\t\d+$/m);
      assert.match(first.stdout, /^api_keys\t2$/m);
      await assert.rejects(run(process.execPath, [CLI, 'migrate', '--from', sourceUrl, '--to', other.url], { env }), (e: { code?: number; stderr?: string }) => {
        assert.equal(e.code, 1);
        assert.match(e.stderr ?? '', /opinference: the target database already holds data \(2 in api_keys, \d+ in generations.*pass --resume/);
        return true;
      });
      await assert.rejects(run(process.execPath, [CLI, 'migrate', '--from', `sqlite:${join(dir, 'nope.db')}`, '--to', other.url], { env }), (e: { stderr?: string }) => /no SQLite database at .*nope\.db/.test(e.stderr ?? ''));
      assert.equal(existsSync(join(dir, 'nope.db')), false);
    } finally {
      await other.drop();
    }
  });
});
