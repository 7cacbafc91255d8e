/**
 * The schema on both engines: replicas running `opinference migrate` at the same moment apply
 * each step exactly once (the dialect's migration lock); on PostgreSQL, text compares in byte
 * order whatever the database's locale, and bigints arrive as numbers unless they would round.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';
import { MIGRATIONS, migrate } from '../../src/store/migrations.js';
import { createTestDatabase, TEST_DIALECT } from '../helpers/test-database.js';
import { CLI } from '../helpers/cli-process.js';

const run = promisify(execFile);

describe('migrations', () => {
  test('four processes migrating one empty database together: every step applied once, all exit 0', { skip: existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build' }, async () => {
    const database = await createTestDatabase('race.db');
    try {
      const env = { ...process.env, OP_DATABASE_URL: database.url, OP_LOG_LEVEL: 'error' };
      const outs = await Promise.all(Array.from({ length: 4 }, () => run(process.execPath, [CLI, 'migrate'], { env })));
      const applied = outs.flatMap((o) => /^applied: (.*)$/m.exec(o.stdout)?.[1]?.split(', ') ?? []);
      assert.deepEqual(applied.sort(), MIGRATIONS.map((m) => m.name).sort(), outs.map((o) => o.stdout + o.stderr).join('\n'));
      assert.equal(outs.filter((o) => o.stdout === 'database is up to date\n').length, 4 - outs.filter((o) => o.stdout.startsWith('applied: ')).length);
      const store = database.open();
      try {
        const rows = await store.db.selectFrom('migrations_applied').select('name').orderBy('name').execute();
        assert.deepEqual(rows.map((r) => r.name), MIGRATIONS.map((m) => m.name));
        assert.deepEqual(await migrate(store.db), []);
      } finally {
        await store.close();
      }
    } finally {
      await database.drop();
    }
  });

  test('PostgreSQL: every text column compares in byte order ("C"), bigints are numbers unless they would round', { skip: TEST_DIALECT === 'postgres' ? false : 'PostgreSQL only (run npm run test:pg)' }, async () => {
    const database = await createTestDatabase();
    const store = database.open();
    try {
      await migrate(store.db);
      const cols = await sql<{ table_name: string; column_name: string; collation_name: string | null }>`
        select table_name, column_name, collation_name from information_schema.columns
        where table_schema = current_schema() and data_type = 'text' order by table_name, column_name`.execute(store.db);
      assert.ok(cols.rows.length > 40, String(cols.rows.length));
      assert.deepEqual(cols.rows.filter((c) => c.collation_name !== 'C'), []);
      // Byte order: 'B' (0x42) before 'a' (0x61); a locale collation would put 'a' first.
      await store.db.insertInto('generation_tags').values([{ generation_id: 'g', tag: 'a', created_at: 1, key_id: null }, { generation_id: 'g', tag: 'B', created_at: 1, key_id: null }]).execute();
      assert.deepEqual((await store.db.selectFrom('generation_tags').select('tag').orderBy('tag').execute()).map((r) => r.tag), ['B', 'a']);
      const ints = await sql<{ small: unknown; big: unknown; sum: unknown }>`select 1764547200000::bigint as small, 9007199254740993::bigint as big, sum(x) as sum from (values (2::bigint), (3::bigint)) v(x)`.execute(store.db);
      assert.deepEqual(ints.rows[0], { small: 1764547200000, big: '9007199254740993', sum: '5' });
    } finally {
      await store.close();
      await database.drop();
    }
  });

  test('an unreachable PostgreSQL: the error names the database, never its password; an unknown scheme is refused', async () => {
    const store = openDatabase('postgres://gateway:hunter2secret@127.0.0.1:1/opinference?sslmode=disable');
    try {
      await assert.rejects(migrate(store.db), (err: Error) => {
        assert.match(err.message, /^database postgres:\/\/gateway@127\.0\.0\.1:1\/opinference: connect ECONNREFUSED/);
        assert.equal(err.message.includes('hunter2secret'), false);
        return true;
      });
    } finally {
      await store.close();
    }
    assert.throws(() => openDatabase('mysql://db/x'), /unsupported database URL scheme "mysql"; use postgres:\/\/… or sqlite:<path>/);
  });
});
