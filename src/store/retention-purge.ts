import { sql, type Kysely, type SqlBool } from 'kysely';
import type { Database } from './schema.js';
import { purgeExpiredResponses } from './stored-responses.js';
import { purgeExpiredMcpCallText } from './mcp-calls.js';
import { purgeBatches } from './batch-store.js';
import type { FleetLease } from './fleet-lease.js';
import { purgeExpiredAudit } from './audit-log.js';
import { purgeExpiredAlerts } from './alerts.js';

/** Minimal logger shape (pino-compatible). */
export interface PurgeLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const DAY_MS = 86_400_000;
/** Rows cleared per statement, so the writer never waits long for the database lock. */
const PURGE_BATCH = 2_000;

/** Rows that still hold text: the condition of the partial index `generations_retained`. */
const holdsText = sql<SqlBool>`(${sql.ref('content')} is not null or ${sql.ref('error_message')} is not null)`;

/**
 * Remove the stored text of generations whose retention has passed: `content` (the request and
 * output) and `error_message` (which may quote the request) become NULL once
 * `created_at + retention days < now`. Rows with retention `none` never hold text. Works from
 * the partial index of rows still holding text, one retention value at a time, in batches.
 * @returns how many generations were cleared.
 */
export async function purgeExpiredContent(db: Kysely<Database>, now: number = Date.now()): Promise<number> {
  const retentions = await db.selectFrom('generations').select('retention').distinct().where(holdsText).execute();
  let purged = 0;
  for (const { retention } of retentions) {
    if (!/^\d{1,6}$/.test(retention)) continue; // 'none' (never holds text) or not a number of days
    const cutoff = now - Number(retention) * DAY_MS;
    for (;;) {
      const res = await db
        .updateTable('generations')
        .set({ content: null, error_message: null })
        .where('id', 'in', (eb) => eb.selectFrom('generations').select('id').where(holdsText).where('retention', '=', retention).where('created_at', '<', cutoff).limit(PURGE_BATCH))
        .executeTakeFirst();
      const n = Number(res.numUpdatedRows);
      purged += n;
      if (n < PURGE_BATCH) break;
    }
  }
  return purged;
}

/** First delay before a failed purge run (the database unreachable, the lease lost) is tried again, in ms; doubles per failure. */
export const PURGE_RETRY_MIN_MS = 1_000;
/** Longest delay between retries of a failing purge, in ms (or the interval, when shorter). */
export const PURGE_RETRY_MAX_MS = 300_000;

/** Retention of the audit log and of alert events and deliveries, in days (config `audit.retention_days`, `alerts.retention_days`). */
export interface LogRetention {
  auditDays: number;
  alertDays: number;
}

/**
 * Run {@link purgeExpiredContent}, {@link purgeExpiredResponses} (stored Responses API
 * objects), {@link purgeExpiredMcpCallText} (MCP tool-call records' arguments and results) and, with `retention` (read at each run, so a reload applies), the audit log's and
 * the alerts' own retention ({@link purgeExpiredAudit}, {@link purgeExpiredAlerts}) now and every `intervalMs` (the timer does not keep the process alive; runs never
 * overlap). With a `lease`, only the process holding it runs the purge, so replicas sharing a
 * database purge once, not once each. Counts are logged; failures are logged, never thrown: a
 * run that failed (the database unreachable, the lease's connection lost) is tried again after
 * {@link PURGE_RETRY_MIN_MS}, doubling up to {@link PURGE_RETRY_MAX_MS} (at most the interval),
 * asking for the lease again each time.
 * @returns a function that stops the timer and gives the lease up.
 */
export function startRetentionPurge(db: Kysely<Database>, log: PurgeLogger, intervalMs: number, lease?: FleetLease, retention?: () => LogRetention, batchResultDays = 29): () => Promise<void> {
  let running = false;
  let stopped = false;
  let retryDelay = PURGE_RETRY_MIN_MS;
  let retryTimer: NodeJS.Timeout | undefined;
  const retryLater = () => {
    if (stopped || intervalMs <= 0 || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void run();
    }, Math.min(retryDelay, intervalMs));
    retryTimer.unref();
    retryDelay = Math.min(retryDelay * 2, PURGE_RETRY_MAX_MS);
  };
  const run = async (): Promise<void> => {
    if (running || stopped) return;
    running = true;
    const started = Date.now();
    try {
      if (lease && !(await lease.holds())) return;
      if (stopped) return;
      const purged = await purgeExpiredContent(db, started);
      const responses = await purgeExpiredResponses(db, started);
      const mcpCalls = await purgeExpiredMcpCallText(db, started);
      const keep = retention?.();
      const audit = keep ? await purgeExpiredAudit(db, keep.auditDays, started) : 0;
      const alerts = keep ? await purgeExpiredAlerts(db, keep.alertDays, started) : 0;
      const batches = await purgeBatches(db, started, started - batchResultDays * DAY_MS);
      retryDelay = PURGE_RETRY_MIN_MS;
      if (!stopped) log.info({ purged, responses, mcpCalls, audit, alerts, files: batches.files, batches: batches.batches, ms: Date.now() - started }, 'retention purge');
    } catch (err) {
      if (!stopped) log.error({ err, retryInMs: Math.min(retryDelay, intervalMs) }, 'retention purge failed; it runs again later');
      retryLater();
    } finally {
      running = false;
    }
  };
  void run();
  const timer = intervalMs > 0 ? setInterval(() => void run(), intervalMs) : undefined;
  timer?.unref();
  return async () => {
    stopped = true;
    if (timer) clearInterval(timer);
    if (retryTimer) clearTimeout(retryTimer);
    await lease?.close();
  };
}
