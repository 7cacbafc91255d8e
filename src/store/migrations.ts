import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

/** One schema step. Steps run once each, in order, inside a transaction. */
interface Migration {
  name: string;
  up(db: Kysely<Database>): Promise<void>;
}

/** The schema, step by step. Append only: never edit a step that has shipped. */
export const MIGRATIONS: readonly Migration[] = [
  {
    name: '0001_keys_and_generations',
    async up(db) {
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('settings', 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
      await db.schema
        .createTable('generations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('request_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('key_id', 'text')
        .addColumn('requested_model', 'text', (c) => c.notNull())
        .addColumn('served_model', 'text')
        .addColumn('provider', 'text')
        .addColumn('endpoint', 'text')
        .addColumn('upstream_model', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('finish_reason', 'text')
        .addColumn('native_finish_reason', 'text')
        .addColumn('api', 'text', (c) => c.notNull())
        .addColumn('streamed', 'integer', (c) => c.notNull())
        .addColumn('cancelled', 'integer', (c) => c.notNull())
        .addColumn('prompt_tokens', 'integer')
        .addColumn('completion_tokens', 'integer')
        .addColumn('reasoning_tokens', 'integer')
        .addColumn('cached_tokens', 'integer')
        .addColumn('cache_write_tokens', 'integer')
        .addColumn('usage_source', 'text')
        .addColumn('cost_pico', 'bigint', (c) => c.notNull())
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('ttft_ms', 'integer')
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('session', 'text')
        .addColumn('retention', 'text', (c) => c.notNull())
        .addColumn('detail', 'text', (c) => c.notNull())
        .addColumn('content', 'text')
        .execute();
      await db.schema.createIndex('generations_key_created').on('generations').columns(['key_id', 'created_at']).execute();
      await db.schema.createIndex('generations_created').on('generations').column('created_at').execute();
    },
  },
];

/**
 * Apply the migrations not yet applied. Safe to run at every start and from `opinference migrate`.
 * @returns the names of the steps applied now.
 */
export async function migrate(db: Kysely<Database>): Promise<string[]> {
  await db.schema
    .createTable('migrations_applied')
    .ifNotExists()
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('applied_at', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
    .execute();
  const done = new Set((await db.selectFrom('migrations_applied').select('name').execute()).map((r) => r.name));
  const applied: string[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.name)) continue;
    await db.transaction().execute(async (trx) => {
      await m.up(trx);
      await trx.insertInto('migrations_applied').values({ name: m.name, applied_at: Date.now() }).execute();
    });
    applied.push(m.name);
  }
  return applied;
}
