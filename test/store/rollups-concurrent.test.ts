/**
 * Replicas writing to one PostgreSQL database at the same time: every rollup stays exact. The
 * writer reads a group's latency histograms and writes them back merged, so two transactions
 * adding to the same group must not interleave (on SQLite, the database's write lock already
 * serializes them).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { GenerationWriter } from '../../src/store/generation-writer.js';
import { migrate } from '../../src/store/migrations.js';
import type { GenerationsTable } from '../../src/store/schema.js';
import { createTestDatabase, TEST_DIALECT } from '../helpers/test-database.js';

const HOUR = 3_600_000;
const T = Date.UTC(2025, 6, 1, 10);

function row(replica: number, n: number): GenerationsTable {
  return {
    id: `gen_r${replica}_${String(n).padStart(5, '0')}`, request_id: `req_r${replica}_${n}`, created_at: T + (n % 3) * HOUR + n, key_id: 'key_a', requested_model: 'm', served_model: 'm',
    provider: 'p', endpoint: 'p/m', upstream_model: 'm', status: 'success', error_code: null, error_message: null, http_status: 200, finish_reason: 'stop',
    native_finish_reason: 'stop', api: 'chat', streamed: 1, cancelled: 0, prompt_tokens: 10, completion_tokens: 5, reasoning_tokens: null, cached_tokens: null,
    cache_write_tokens: null, usage_source: 'upstream', cost_pico: 7n, latency_ms: (n * 37) % 3000, ttft_ms: (n * 11) % 400, tags: JSON.stringify(['t']),
    session: `s${n % 4}`, retention: 'none', detail: '{}', content: null,
  };
}

describe('rollups under concurrent writers', () => {
  test('four replicas writing the same groups at once: sums, histograms and session counts exact', { skip: TEST_DIALECT === 'postgres' ? false : 'PostgreSQL only: on SQLite the write lock serializes writers (and two connections in one process would block each other)' }, async () => {
    const database = await createTestDatabase();
    const stores = Array.from({ length: 4 }, () => database.open());
    try {
      await migrate(stores[0]!.db);
      const PER = 600;
      await Promise.all(
        stores.map(async (store, replica) => {
          const writer = new GenerationWriter(store.db, { error: (o, m) => assert.fail(`${m} ${JSON.stringify(o)}`) }, 1_000_000, Number.MAX_SAFE_INTEGER);
          // Many small batches, so that the replicas' transactions overlap on the same groups.
          for (let i = 0; i < PER; i += 20) {
            for (let n = i; n < i + 20; n++) writer.enqueue(row(replica, n));
            await writer.flush();
          }
          assert.equal(writer.written, PER);
        }),
      );
      const db = stores[0]!.db;
      for (const table of ['usage_hourly', 'usage_hourly_tags', 'usage_daily', 'usage_daily_tags'] as const) {
        const rows = await db.selectFrom(table as 'usage_hourly').select(['requests', 'latency_hist', 'ttft_hist', sql<string>`cast(cost_pico as text)`.as('cost')]).execute();
        const requests = rows.reduce((s, r) => s + Number(r.requests), 0);
        assert.equal(requests, 4 * PER, table);
        for (const r of rows) {
          const sum = (json: string) => (JSON.parse(json) as number[]).reduce((s, n) => s + n, 0);
          assert.equal(sum(r.latency_hist), Number(r.requests), `${table} latency histogram`);
          assert.equal(sum(r.ttft_hist), Number(r.requests), `${table} ttft histogram`);
          assert.equal(r.cost, String(7 * Number(r.requests)), `${table} cost`);
        }
      }
      const sessions = await db.selectFrom('usage_daily_sessions').select((eb) => eb.fn.sum<number | string>('requests').as('n')).executeTakeFirstOrThrow();
      assert.equal(Number(sessions.n), 4 * PER);
    } finally {
      for (const s of stores) await s.close();
      await database.drop();
    }
  });
});
