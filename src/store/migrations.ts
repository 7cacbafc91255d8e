import { sql, type Kysely, type SqlBool } from 'kysely';
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
  {
    name: '0002_usage_rollups_and_search_indexes',
    async up(db) {
      const rollup = (name: 'usage_hourly' | 'usage_hourly_tags', withTag: boolean) => {
        let t = db.schema.createTable(name).addColumn('hour', 'bigint', (c) => c.notNull()).addColumn('key_id', 'text', (c) => c.notNull());
        if (withTag) t = t.addColumn('tag', 'text', (c) => c.notNull());
        return t
          .addColumn('model', 'text', (c) => c.notNull())
          .addColumn('provider', 'text', (c) => c.notNull())
          .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('cancelled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('reasoning_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cached_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cost_pico', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('latency_hist', 'text', (c) => c.notNull())
          .addColumn('ttft_hist', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint(`${name}_pk`, (withTag ? ['hour', 'key_id', 'tag', 'model', 'provider'] : ['hour', 'key_id', 'model', 'provider']) as never)
          .execute();
      };
      await rollup('usage_hourly', false);
      await rollup('usage_hourly_tags', true);
      await db.schema.createIndex('usage_hourly_key_hour').on('usage_hourly').columns(['key_id', 'hour']).execute();
      await db.schema.createIndex('usage_hourly_tags_tag_hour').on('usage_hourly_tags').columns(['tag', 'hour']).execute();
      await db.schema
        .createTable('generation_tags')
        .addColumn('generation_id', 'text', (c) => c.notNull())
        .addColumn('tag', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('key_id', 'text')
        .addPrimaryKeyConstraint('generation_tags_pk', ['generation_id', 'tag'])
        .execute();
      await db.schema.createIndex('generation_tags_tag_created').on('generation_tags').columns(['tag', 'created_at']).execute();
      for (const col of ['served_model', 'provider', 'status', 'session', 'requested_model'] as const) {
        await db.schema.createIndex(`generations_${col}_created`).on('generations').columns([col, 'created_at']).execute();
      }
    },
  },
  {
    name: '0003_session_usage_and_retention_indexes',
    async up(db) {
      // Usage grouped by session for one key: the key's sessions in order, covering the time.
      await db.schema.createIndex('generations_key_session_created').on('generations').columns(['key_id', 'session', 'created_at']).execute();
      // The retention purge: only rows still holding text are in this (partial) index.
      await db.schema
        .createIndex('generations_retained')
        .on('generations')
        .columns(['retention', 'created_at'])
        .where(sql<SqlBool>`${sql.ref('content')} is not null or ${sql.ref('error_message')} is not null`)
        .execute();
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
