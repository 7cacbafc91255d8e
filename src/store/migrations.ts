import { sql, type Kysely, type SqlBool } from 'kysely';
import { sqlDialectOf } from './sql-dialect.js';
import type { Database } from './schema.js';
import { backfillRefused } from './usage-rollup.js';

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
      const { text } = sqlDialectOf(db);
      await db.schema
        .createTable('api_keys')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('name', text, (c) => c.notNull())
        .addColumn('hash', text, (c) => c.notNull().unique())
        .addColumn('prefix', text, (c) => c.notNull())
        .addColumn('disabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('settings', text, (c) => c.notNull().defaultTo('{}'))
        .execute();
      await db.schema
        .createTable('generations')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('request_id', text, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('key_id', text)
        .addColumn('requested_model', text, (c) => c.notNull())
        .addColumn('served_model', text)
        .addColumn('provider', text)
        .addColumn('endpoint', text)
        .addColumn('upstream_model', text)
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('error_code', text)
        .addColumn('error_message', text)
        .addColumn('http_status', 'integer', (c) => c.notNull())
        .addColumn('finish_reason', text)
        .addColumn('native_finish_reason', text)
        .addColumn('api', text, (c) => c.notNull())
        .addColumn('streamed', 'integer', (c) => c.notNull())
        .addColumn('cancelled', 'integer', (c) => c.notNull())
        .addColumn('prompt_tokens', 'integer')
        .addColumn('completion_tokens', 'integer')
        .addColumn('reasoning_tokens', 'integer')
        .addColumn('cached_tokens', 'integer')
        .addColumn('cache_write_tokens', 'integer')
        .addColumn('usage_source', text)
        .addColumn('cost_pico', 'bigint', (c) => c.notNull())
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('ttft_ms', 'integer')
        .addColumn('tags', text, (c) => c.notNull())
        .addColumn('session', text)
        .addColumn('retention', text, (c) => c.notNull())
        .addColumn('detail', text, (c) => c.notNull())
        .addColumn('content', text)
        .execute();
      await db.schema.createIndex('generations_key_created').on('generations').columns(['key_id', 'created_at']).execute();
      await db.schema.createIndex('generations_created').on('generations').column('created_at').execute();
    },
  },
  {
    name: '0002_usage_rollups_and_search_indexes',
    async up(db) {
      const { text } = sqlDialectOf(db);
      const rollup = (name: 'usage_hourly' | 'usage_hourly_tags', withTag: boolean) => {
        let t = db.schema.createTable(name).addColumn('hour', 'bigint', (c) => c.notNull()).addColumn('key_id', text, (c) => c.notNull());
        if (withTag) t = t.addColumn('tag', text, (c) => c.notNull());
        return t
          .addColumn('model', text, (c) => c.notNull())
          .addColumn('provider', text, (c) => c.notNull())
          .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('cancelled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('reasoning_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cached_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cost_pico', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('latency_hist', text, (c) => c.notNull())
          .addColumn('ttft_hist', text, (c) => c.notNull())
          .addPrimaryKeyConstraint(`${name}_pk`, (withTag ? ['hour', 'key_id', 'tag', 'model', 'provider'] : ['hour', 'key_id', 'model', 'provider']) as never)
          .execute();
      };
      await rollup('usage_hourly', false);
      await rollup('usage_hourly_tags', true);
      await db.schema.createIndex('usage_hourly_key_hour').on('usage_hourly').columns(['key_id', 'hour']).execute();
      await db.schema.createIndex('usage_hourly_tags_tag_hour').on('usage_hourly_tags').columns(['tag', 'hour']).execute();
      await db.schema
        .createTable('generation_tags')
        .addColumn('generation_id', text, (c) => c.notNull())
        .addColumn('tag', text, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('key_id', text)
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
  {
    name: '0004_daily_rollups',
    async up(db) {
      const { text } = sqlDialectOf(db);
      // On SQLite the new tables are stored in key order (WITHOUT ROWID): a day range is read
      // with no lookups, and each table is one b-tree fewer to write.
      const { keyOrdered } = sqlDialectOf(db);
      // Daily rollups: the hourly tables' columns with `day` (the UTC day's start) for `hour`.
      const rollup = async (name: 'usage_daily' | 'usage_daily_tags', withTag: boolean) => {
        let t = db.schema.createTable(name).addColumn('day', 'bigint', (c) => c.notNull()).addColumn('key_id', text, (c) => c.notNull());
        if (withTag) t = t.addColumn('tag', text, (c) => c.notNull());
        t = t
          .addColumn('model', text, (c) => c.notNull())
          .addColumn('provider', text, (c) => c.notNull())
          .addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('cancelled', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('prompt_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('completion_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('reasoning_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cached_tokens', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('cost_pico', 'bigint', (c) => c.notNull().defaultTo(0))
          .addColumn('latency_hist', text, (c) => c.notNull())
          .addColumn('ttft_hist', text, (c) => c.notNull())
          .addPrimaryKeyConstraint(`${name}_pk`, (withTag ? ['day', 'key_id', 'tag', 'model', 'provider'] : ['day', 'key_id', 'model', 'provider']) as never);
        await keyOrdered(t).execute();
      };
      await rollup('usage_daily', false);
      await rollup('usage_daily_tags', true);
      await db.schema.createIndex('usage_daily_key_day').on('usage_daily').columns(['key_id', 'day']).execute();
      await db.schema.createIndex('usage_daily_tags_tag_day').on('usage_daily_tags').columns(['tag', 'day']).execute();

      // Requests per (day, key, session[, tag], model, provider): they rank the sessions of
      // group_by session, read by day ranges.
      const counts = async (name: 'usage_daily_sessions' | 'usage_daily_session_models' | 'usage_daily_session_tags', key: string[]) => {
        let t = db.schema.createTable(name);
        for (const col of key) t = t.addColumn(col, col === 'day' ? 'bigint' : text, (c) => c.notNull());
        t = t.addColumn('requests', 'integer', (c) => c.notNull().defaultTo(0)).addPrimaryKeyConstraint(`${name}_pk`, key as never);
        await keyOrdered(t).execute();
      };
      await counts('usage_daily_sessions', ['day', 'key_id', 'session']);
      await counts('usage_daily_session_models', ['day', 'key_id', 'session', 'model', 'provider']);
      await counts('usage_daily_session_tags', ['day', 'key_id', 'tag', 'session', 'model', 'provider']);

      // Backfill the daily rollups from the hourly ones, one day at a time, summed in JS: costs
      // read as text (exact bigints), histograms (JSON arrays of counts) added element-wise.
      const DAY = 86_400_000;
      const SUMS = ['requests', 'errors', 'cancelled', 'prompt_tokens', 'completion_tokens', 'reasoning_tokens', 'cached_tokens'] as const;
      const backfill = async (from: 'usage_hourly' | 'usage_hourly_tags', to: 'usage_daily' | 'usage_daily_tags') => {
        const tagged = from === 'usage_hourly_tags';
        const span = await db
          .selectFrom(from as 'usage_hourly')
          .select((eb) => [eb.fn.min<number | null>('hour').as('lo'), eb.fn.max<number | null>('hour').as('hi')])
          .executeTakeFirst();
        if (span?.lo === null || span?.lo === undefined || span.hi === null) return;
        for (let day = Math.floor(Number(span.lo) / DAY) * DAY; day <= Number(span.hi); day += DAY) {
          const rows = await db
            .selectFrom(from as 'usage_hourly')
            .select(['key_id', 'model', 'provider', ...SUMS, 'latency_hist', 'ttft_hist'])
            .select([sql<string>`cast(cost_pico as text)`.as('cost'), (tagged ? sql<string>`tag` : sql<string>`''`).as('tag')])
            .where('hour', '>=', day)
            .where('hour', '<', day + DAY)
            .execute();
          const days = new Map<string, Record<string, unknown> & { sums: number[]; cost: bigint; latency: number[]; ttft: number[] }>();
          for (const r of rows) {
            const id = JSON.stringify([r.key_id, r.tag, r.model, r.provider]);
            let d = days.get(id);
            if (!d) days.set(id, (d = { key_id: r.key_id, tag: r.tag, model: r.model, provider: r.provider, sums: SUMS.map(() => 0), cost: 0n, latency: [], ttft: [] }));
            SUMS.forEach((col, i) => (d.sums[i]! += Number(r[col])));
            d.cost += BigInt(r.cost);
            for (const [hist, json] of [
              [d.latency, r.latency_hist],
              [d.ttft, r.ttft_hist],
            ] as const) {
              (JSON.parse(json) as number[]).forEach((n, i) => (hist[i] = (hist[i] ?? 0) + n));
            }
          }
          const values = [...days.values()].map((d) => ({
            day,
            key_id: d.key_id,
            ...(tagged ? { tag: d.tag } : {}),
            model: d.model,
            provider: d.provider,
            ...Object.fromEntries(SUMS.map((col, i) => [col, d.sums[i]])),
            cost_pico: d.cost,
            latency_hist: JSON.stringify(d.latency),
            ttft_hist: JSON.stringify(d.ttft),
          }));
          for (let i = 0; i < values.length; i += 50) await db.insertInto(to).values(values.slice(i, i + 50) as never).execute();
        }
      };
      await backfill('usage_hourly', 'usage_daily');
      await backfill('usage_hourly_tags', 'usage_daily_tags');

      // Backfill the session counts from the generations.
      const day = sql<number>`${sql.ref('g.created_at')} - ${sql.ref('g.created_at')} % ${sql.lit(DAY)}`;
      const keyId = sql<string>`coalesce(${sql.ref('g.key_id')}, '')`;
      const model = sql<string>`coalesce(${sql.ref('g.served_model')}, ${sql.ref('g.requested_model')})`;
      const provider = sql<string>`coalesce(${sql.ref('g.provider')}, '')`;
      const session = sql<string>`${sql.ref('g.session')}`;
      const withSession = db.selectFrom('generations as g').where('g.session', 'is not', null);
      await db
        .insertInto('usage_daily_sessions')
        .columns(['day', 'key_id', 'session', 'requests'])
        .expression(withSession.select((eb) => [day.as('day'), keyId.as('key_id'), session.as('session'), eb.fn.countAll<number>().as('requests')]).groupBy([day, keyId, session]))
        .execute();
      await db
        .insertInto('usage_daily_session_models')
        .columns(['day', 'key_id', 'session', 'model', 'provider', 'requests'])
        .expression(
          withSession
            .select((eb) => [day.as('day'), keyId.as('key_id'), session.as('session'), model.as('model'), provider.as('provider'), eb.fn.countAll<number>().as('requests')])
            .groupBy([day, keyId, session, model, provider]),
        )
        .execute();
      const tag = sql<string>`${sql.ref('t.tag')}`;
      await db
        .insertInto('usage_daily_session_tags')
        .columns(['day', 'key_id', 'tag', 'session', 'model', 'provider', 'requests'])
        .expression(
          withSession
            .innerJoin('generation_tags as t', 't.generation_id', 'g.id')
            .select((eb) => [day.as('day'), keyId.as('key_id'), tag.as('tag'), session.as('session'), model.as('model'), provider.as('provider'), eb.fn.countAll<number>().as('requests')])
            .groupBy([day, keyId, tag, session, model, provider]),
        )
        .execute();
    },
  },
  {
    name: '0005_filter_statistics',
    async up(db) {
      // PostgreSQL only (a no-op on SQLite): estimates for the search's unindexed filters.
      const coalesced = (col: string) => sql`coalesce(${sql.ref(col)}, '')`;
      await sqlDialectOf(db).createExpressionStatistics(db, 'generations_filter_values', 'generations', ['key_id', 'served_model', 'requested_model', 'provider', 'session', 'status'].map(coalesced));
    },
  },
  {
    name: '0006_refused_in_rollups',
    async up(db) {
      // Refusals (a 4xx for the request's or key's own reason, no provider answering) counted
      // apart from errors when written, so the usage reads no longer look for them in
      // `generations`. A column with a constant default: no table rewrite on either engine.
      for (const table of ['usage_hourly', 'usage_hourly_tags', 'usage_daily', 'usage_daily_tags'] as const) {
        await db.schema.alterTable(table).addColumn('refused', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      }
      // The rollups written so far counted them under `errors`: move them (see isRefusal).
      await backfillRefused(db);
    },
  },
  {
    // Responses API objects kept for `GET /v1/responses/{id}` and `previous_response_id`.
    name: '0007_stored_responses',
    async up(db) {
      const text = sqlDialectOf(db).text;
      await db.schema
        .createTable('stored_responses')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('key_id', text)
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('body', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('stored_responses_expires').on('stored_responses').column('expires_at').execute();
    },
  },
  {
    // The exact response cache (src/cache/): one row per cached answer, without Redis.
    name: '0008_response_cache',
    async up(db) {
      const text = sqlDialectOf(db).text;
      await db.schema
        .createTable('response_cache')
        .addColumn('cache_key', text, (c) => c.primaryKey())
        .addColumn('value', text, (c) => c.notNull())
        .addColumn('size_bytes', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('response_cache_expires').on('response_cache').column('expires_at').execute();
    },
  },
  // 0009 is another change's (the steps are applied by name, so a gap in the numbers is fine).
  {
    // Teams (issue 23 item 1): a key may belong to one; limits over the sum of its keys.
    name: '0010_teams',
    async up(db) {
      const text = sqlDialectOf(db).text;
      await db.schema
        .createTable('teams')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('name', text, (c) => c.notNull().unique())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('settings', text, (c) => c.notNull().defaultTo('{}'))
        .execute();
      await db.schema.alterTable('api_keys').addColumn('team_id', text).execute();
      await db.schema.createIndex('api_keys_team').on('api_keys').column('team_id').execute();
    },
  },
  {
    // End users (issue 23 item 2): who of an app's users a generation was for.
    name: '0011_end_users',
    async up(db) {
      await db.schema.alterTable('generations').addColumn('end_user', sqlDialectOf(db).text).execute();
      await db.schema.createIndex('generations_key_end_user').on('generations').columns(['key_id', 'end_user', 'created_at']).execute();
    },
  },
  {
    // Batches (issue 24 items 2-4): files, batches and their queued lines; records name their batch line.
    name: '0012_batches',
    async up(db) {
      const dialect = sqlDialectOf(db);
      const text = dialect.text;
      await db.schema.alterTable('generations').addColumn('batch_id', text).execute();
      await db.schema.alterTable('generations').addColumn('custom_id', text).execute();
      await db.schema.createIndex('generations_batch').on('generations').columns(['batch_id', 'custom_id']).execute();
      await db.schema
        .createTable('batch_files')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('key_id', text)
        .addColumn('purpose', text, (c) => c.notNull())
        .addColumn('filename', text, (c) => c.notNull())
        .addColumn('bytes', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('batch_id', text)
        .addColumn('role', text)
        .execute();
      await db.schema.createIndex('batch_files_key').on('batch_files').columns(['key_id', 'created_at']).execute();
      await dialect
        .keyOrdered(
          db.schema
            .createTable('batch_file_chunks')
            .addColumn('file_id', text, (c) => c.notNull())
            .addColumn('seq', 'integer', (c) => c.notNull())
            .addColumn('data', text, (c) => c.notNull())
            .addPrimaryKeyConstraint('batch_file_chunks_pk', ['file_id', 'seq']),
        )
        .execute();
      await db.schema
        .createTable('batches')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('key_id', text)
        .addColumn('api', text, (c) => c.notNull())
        .addColumn('endpoint', text, (c) => c.notNull())
        .addColumn('input_file_id', text)
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('completion_window', text, (c) => c.notNull())
        .addColumn('metadata', text)
        .addColumn('errors', text)
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('retention', text, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('in_progress_at', 'bigint')
        .addColumn('finalizing_at', 'bigint')
        .addColumn('completed_at', 'bigint')
        .addColumn('failed_at', 'bigint')
        .addColumn('expired_at', 'bigint')
        .addColumn('cancelling_at', 'bigint')
        .addColumn('cancelled_at', 'bigint')
        .addColumn('results_read_at', 'bigint')
        .addColumn('output_file_id', text)
        .addColumn('error_file_id', text)
        .execute();
      await db.schema.createIndex('batches_key').on('batches').columns(['key_id', 'api', 'created_at']).execute();
      await db.schema.createIndex('batches_status').on('batches').columns(['status']).execute();
      await dialect
        .keyOrdered(
          db.schema
            .createTable('batch_lines')
            .addColumn('batch_id', text, (c) => c.notNull())
            .addColumn('line_no', 'integer', (c) => c.notNull())
            .addColumn('custom_id', text, (c) => c.notNull())
            .addColumn('line_id', text, (c) => c.notNull())
            .addColumn('key_id', text)
            .addColumn('model', text, (c) => c.notNull())
            .addColumn('body', text, (c) => c.notNull())
            .addColumn('state', text, (c) => c.notNull())
            .addColumn('lease_owner', text)
            .addColumn('lease_until', 'bigint', (c) => c.notNull())
            .addColumn('not_before', 'bigint', (c) => c.notNull())
            .addColumn('tries', 'integer', (c) => c.notNull())
            .addColumn('status_code', 'integer')
            .addColumn('result', text)
            .addColumn('generation_id', text)
            .addColumn('request_id', text)
            .addColumn('finished_at', 'bigint')
            .addPrimaryKeyConstraint('batch_lines_pk', ['batch_id', 'line_no']),
        )
        .execute();
      await db.schema.createIndex('batch_lines_claim').on('batch_lines').columns(['state', 'batch_id', 'line_no']).execute();
    },
  },
  {
    // MCP tool-call records (issue 22 item 4): one row per tools/call, beside the generations.
    name: '0013_mcp_tool_calls',
    async up(db) {
      const { text } = sqlDialectOf(db);
      await db.schema
        .createTable('mcp_tool_calls')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('key_id', text)
        .addColumn('team_id', text)
        .addColumn('request_id', text)
        .addColumn('session_id', text, (c) => c.notNull())
        .addColumn('server', text, (c) => c.notNull())
        .addColumn('tool', text, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('error_code', text)
        .addColumn('error_message', text)
        .addColumn('latency_ms', 'integer', (c) => c.notNull())
        .addColumn('request_bytes', 'bigint', (c) => c.notNull())
        .addColumn('response_bytes', 'bigint', (c) => c.notNull())
        .addColumn('retention', text, (c) => c.notNull())
        .addColumn('arguments', text)
        .addColumn('result', text)
        .execute();
      await db.schema.createIndex('mcp_tool_calls_created').on('mcp_tool_calls').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('mcp_tool_calls_key_created').on('mcp_tool_calls').columns(['key_id', 'created_at']).execute();
      await db.schema.createIndex('mcp_tool_calls_server_tool').on('mcp_tool_calls').columns(['server', 'tool', 'created_at']).execute();
    },
  },
  {
    // The audit log and alerts (issue 23 items 4 and 5): admin changes, append-only; alert
    // webhooks made through the API; alert events (one per dedupe key across the fleet), their
    // deliveries, and the fleet-wide state of what alerts watch (a breaker open or closed).
    name: '0014_audit_log_and_alerts',
    async up(db) {
      const text = sqlDialectOf(db).text;
      await db.schema
        .createTable('audit_log')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('actor_type', text, (c) => c.notNull())
        .addColumn('actor_id', text, (c) => c.notNull())
        .addColumn('action', text, (c) => c.notNull())
        .addColumn('target_type', text, (c) => c.notNull())
        .addColumn('target_id', text)
        .addColumn('before', text)
        .addColumn('after', text)
        .addColumn('request_id', text)
        .addColumn('source_ip', text)
        .execute();
      await db.schema.createIndex('audit_log_time').on('audit_log').columns(['created_at', 'id']).execute();
      await db.schema.createIndex('audit_log_target').on('audit_log').columns(['target_type', 'target_id', 'created_at']).execute();
      await db.schema.createIndex('audit_log_action').on('audit_log').columns(['action', 'created_at']).execute();
      await db.schema
        .createTable('alert_webhooks')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('url', text, (c) => c.notNull())
        .addColumn('format', text, (c) => c.notNull())
        .addColumn('secret_env', text)
        .addColumn('events', text, (c) => c.notNull().defaultTo('[]'))
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('alert_events')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('dedupe_key', text, (c) => c.notNull().unique())
        .addColumn('type', text, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('data', text, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alert_events_time').on('alert_events').column('created_at').execute();
      await db.schema
        .createTable('alert_deliveries')
        .addColumn('id', text, (c) => c.primaryKey())
        .addColumn('event_id', text, (c) => c.notNull())
        .addColumn('webhook_id', text, (c) => c.notNull())
        .addColumn('url', text, (c) => c.notNull())
        .addColumn('status', text, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('last_status', 'integer')
        .addColumn('last_error', text)
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('delivered_at', 'bigint')
        .addUniqueConstraint('alert_deliveries_event_webhook', ['event_id', 'webhook_id'])
        .execute();
      await db.schema.createIndex('alert_deliveries_due').on('alert_deliveries').columns(['status', 'next_attempt_at']).execute();
      await db.schema.createIndex('alert_deliveries_time').on('alert_deliveries').column('created_at').execute();
      await db.schema
        .createTable('alert_state')
        .addColumn('subject', text, (c) => c.primaryKey())
        .addColumn('state', text, (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  // 0015 is unused (the steps are applied by name, so a gap in the numbers is fine).
  {
    // The catalog without a redeploy (issue 23 item 6): providers and models entered through the
    // admin API, merged with the config file's; `catalog_revision` counts every change.
    name: '0016_catalog_entries',
    async up(db) {
      const text = sqlDialectOf(db).text;
      await db.schema
        .createTable('catalog_entries')
        .addColumn('kind', text, (c) => c.notNull())
        .addColumn('id', text, (c) => c.notNull())
        .addColumn('entry', text, (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_by', text)
        .addPrimaryKeyConstraint('catalog_entries_pk', ['kind', 'id'])
        .execute();
      await db.schema
        .createTable('catalog_revision')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('revision', 'bigint', (c) => c.notNull())
        .execute();
      await db.insertInto('catalog_revision').values({ id: 1, revision: 0 }).execute();
    },
  },
];

/**
 * Apply the migrations not yet applied. Safe to run at every start and from `opinference migrate`,
 * and from several processes at once: they take turns on the dialect's migration lock
 * (PostgreSQL advisory lock, SQLite write lock), and each step is applied by the first to get it.
 * Each step commits with its record in `migrations_applied` (on SQLite, all pending steps commit
 * together).
 * @returns the names of the steps applied now (empty when the schema was up to date).
 */
export async function migrate(db: Kysely<Database>): Promise<string[]> {
  const dialect = sqlDialectOf(db);
  return dialect.withMigrationLock(db, async (conn: Kysely<Database>, step) => {
    await conn.schema
      .createTable('migrations_applied')
      .ifNotExists()
      .addColumn('name', dialect.text, (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull().defaultTo(sql`0`))
      .execute();
    const done = new Set((await conn.selectFrom('migrations_applied').select('name').execute()).map((r) => r.name));
    const applied: string[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.name)) continue;
      await step(async (trx: Kysely<Database>) => {
        await m.up(trx);
        await trx.insertInto('migrations_applied').values({ name: m.name, applied_at: Date.now() }).execute();
      });
      applied.push(m.name);
    }
    return applied;
  });
}

