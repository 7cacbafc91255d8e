import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { randomId, timePrefix } from '../util/ids.js';

/**
 * The tables of alerts (issue 23 item 5; src/alerts/ sends them): webhooks made through the API,
 * events (one per dedupe key across every process sharing the database: the unique constraint
 * decides which process sends an event), their deliveries (claimed row by row, so one process
 * sends each), and the fleet-wide state of what alerts watch. Times in ms since the epoch.
 * @see docs/governance.md#alerts
 */

/** A webhook as stored (API-made) or configured (`source: config`). */
export interface AlertWebhook {
  id: string;
  url: string;
  format: 'json' | 'slack';
  /** The environment variable holding the HMAC secret, or null (unsigned). */
  secret_env: string | null;
  /** Event types sent to it; empty = all. */
  events: string[];
  source: 'config' | 'api';
  created_at: string | null;
}

const rowToWebhook = (r: Database['alert_webhooks']): AlertWebhook => ({
  id: r.id,
  url: r.url,
  format: r.format === 'slack' ? 'slack' : 'json',
  secret_env: r.secret_env,
  events: JSON.parse(r.events || '[]') as string[],
  source: 'api',
  created_at: new Date(Number(r.created_at)).toISOString(),
});

/** Every API-made webhook, oldest first. */
export async function listAlertWebhooks(db: Kysely<Database>): Promise<AlertWebhook[]> {
  return (await db.selectFrom('alert_webhooks').selectAll().orderBy('created_at').orderBy('id').execute()).map(rowToWebhook);
}

/** One API-made webhook by id. */
export async function getAlertWebhook(db: Kysely<Database>, id: string): Promise<AlertWebhook | undefined> {
  const r = await db.selectFrom('alert_webhooks').selectAll().where('id', '=', id).executeTakeFirst();
  return r ? rowToWebhook(r) : undefined;
}

/** Fields of an API-made webhook. */
export interface AlertWebhookInput {
  url: string;
  format: 'json' | 'slack';
  secret_env: string | null;
  events: string[];
}

export async function createAlertWebhook(db: Kysely<Database>, w: AlertWebhookInput, now = Date.now()): Promise<AlertWebhook> {
  const row = { id: `whk_${randomId(16)}`, url: w.url, format: w.format, secret_env: w.secret_env, events: JSON.stringify(w.events), created_at: now };
  await db.insertInto('alert_webhooks').values(row).execute();
  return rowToWebhook(row);
}

/** @returns the webhook after the change, or undefined when none has that id. */
export async function updateAlertWebhook(db: Kysely<Database>, id: string, w: Partial<AlertWebhookInput>): Promise<AlertWebhook | undefined> {
  const set: Partial<Database['alert_webhooks']> = {};
  if (w.url !== undefined) set.url = w.url;
  if (w.format !== undefined) set.format = w.format;
  if (w.secret_env !== undefined) set.secret_env = w.secret_env;
  if (w.events !== undefined) set.events = JSON.stringify(w.events);
  if (Object.keys(set).length > 0) await db.updateTable('alert_webhooks').set(set).where('id', '=', id).execute();
  return getAlertWebhook(db, id);
}

/** @returns whether a webhook was deleted (its deliveries stay in the log). */
export async function deleteAlertWebhook(db: Kysely<Database>, id: string): Promise<boolean> {
  const res = await db.deleteFrom('alert_webhooks').where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** An event to record once across the fleet. */
export interface AlertEventInput {
  type: string;
  /** Same key = same event: only the first process to insert it sends it. */
  dedupeKey: string;
  data: Record<string, unknown>;
  createdAt: number;
}

/**
 * Insert an event and a pending delivery to each of `webhooks` in one transaction, unless an
 * event with its dedupe key exists (another process, or this one, recorded it first).
 * @returns the event's id and its deliveries, or undefined for a duplicate.
 */
export async function recordAlertEvent(db: Kysely<Database>, e: AlertEventInput, webhooks: readonly { id: string; url: string }[]): Promise<{ eventId: string; deliveries: string[] } | undefined> {
  return db.transaction().execute(async (trx) => {
    const eventId = `evt_${timePrefix(e.createdAt)}${randomId(10)}`;
    const res = await trx
      .insertInto('alert_events')
      .values({ id: eventId, dedupe_key: e.dedupeKey, type: e.type, created_at: e.createdAt, data: JSON.stringify(e.data) })
      .onConflict((oc) => oc.column('dedupe_key').doNothing())
      .executeTakeFirst();
    if (Number(res.numInsertedOrUpdatedRows ?? 0n) === 0) return undefined;
    const deliveries = webhooks.map((w) => ({ id: `dlv_${timePrefix(e.createdAt)}${randomId(10)}`, event_id: eventId, webhook_id: w.id, url: w.url, status: 'pending', attempts: 0, next_attempt_at: e.createdAt, claimed_until: 0, last_status: null, last_error: null, created_at: e.createdAt, delivered_at: null }));
    if (deliveries.length > 0) await trx.insertInto('alert_deliveries').values(deliveries).execute();
    return { eventId, deliveries: deliveries.map((d) => d.id) };
  });
}

/** A delivery claimed for sending, with its event. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  url: string;
  /** Attempts so far, this one included. */
  attempt: number;
  event: { id: string; type: string; created_at: number; data: Record<string, unknown> };
}

/** Ids of pending deliveries due at `now` and not held by a process. */
export async function dueDeliveries(db: Kysely<Database>, now: number, limit = 50): Promise<string[]> {
  const rows = await db.selectFrom('alert_deliveries').select('id').where('status', '=', 'pending').where('next_attempt_at', '<=', now).where('claimed_until', '<=', now).orderBy('next_attempt_at').limit(limit).execute();
  return rows.map((r) => r.id);
}

/**
 * Claim one delivery for `holdMs` (a conditional update: of processes racing for it, one
 * gets it; one that dies while holding it frees it when the hold runs out) and count the attempt.
 * @returns the delivery, or undefined when it is not due, already held, or done.
 */
export async function claimDelivery(db: Kysely<Database>, id: string, now: number, holdMs: number): Promise<ClaimedDelivery | undefined> {
  const res = await db
    .updateTable('alert_deliveries')
    .set((eb) => ({ claimed_until: now + holdMs, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where('claimed_until', '<=', now)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return undefined;
  const row = await db
    .selectFrom('alert_deliveries')
    .innerJoin('alert_events', 'alert_events.id', 'alert_deliveries.event_id')
    .select(['alert_deliveries.id', 'alert_deliveries.webhook_id', 'alert_deliveries.url', 'alert_deliveries.attempts', 'alert_events.id as event_id', 'alert_events.type', 'alert_events.created_at', 'alert_events.data'])
    .where('alert_deliveries.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return { id: row.id, webhookId: row.webhook_id, url: row.url, attempt: Number(row.attempts), event: { id: row.event_id, type: row.type, created_at: Number(row.created_at), data: JSON.parse(row.data) as Record<string, unknown> } };
}

/**
 * The outcome of an attempt: `delivered`, `failed` (no attempt left), or `pending` again at
 * `nextAttemptAt`. `status` is the receiver's HTTP status (null when none answered).
 */
export async function finishAttempt(db: Kysely<Database>, id: string, outcome: { state: 'delivered' | 'failed' | 'pending'; status: number | null; error: string | null; nextAttemptAt?: number; now: number }): Promise<void> {
  await db
    .updateTable('alert_deliveries')
    .set({
      status: outcome.state,
      last_status: outcome.status,
      last_error: outcome.error === null ? null : outcome.error.slice(0, 1000),
      claimed_until: 0,
      ...(outcome.state === 'delivered' ? { delivered_at: outcome.now } : {}),
      ...(outcome.nextAttemptAt !== undefined ? { next_attempt_at: outcome.nextAttemptAt } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** A delivery as `GET /v1/alerts/deliveries` shows it. */
export interface DeliveryEntry {
  id: string;
  webhook_id: string;
  url: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
  delivered_at: string | null;
  event: { id: string; type: string; dedupe_key: string; created_at: string; data: unknown };
}

/** Deliveries newest first, optionally of one webhook, event type or status. */
export async function listDeliveries(db: Kysely<Database>, q: { webhookId?: string | undefined; type?: string | undefined; status?: string | undefined; limit: number }): Promise<DeliveryEntry[]> {
  let query = db
    .selectFrom('alert_deliveries')
    .innerJoin('alert_events', 'alert_events.id', 'alert_deliveries.event_id')
    .selectAll('alert_deliveries')
    .select(['alert_events.type', 'alert_events.dedupe_key', 'alert_events.created_at as event_created_at', 'alert_events.data']);
  if (q.webhookId !== undefined) query = query.where('alert_deliveries.webhook_id', '=', q.webhookId);
  if (q.type !== undefined) query = query.where('alert_events.type', '=', q.type);
  if (q.status !== undefined) query = query.where('alert_deliveries.status', '=', q.status);
  const rows = await query.orderBy('alert_deliveries.created_at', 'desc').orderBy('alert_deliveries.id', 'desc').limit(q.limit).execute();
  const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());
  return rows.map((r) => ({
    id: r.id,
    webhook_id: r.webhook_id,
    url: r.url,
    status: r.status,
    attempts: Number(r.attempts),
    last_status: r.last_status,
    last_error: r.last_error,
    next_attempt_at: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    created_at: iso(r.created_at)!,
    delivered_at: iso(r.delivered_at),
    event: { id: r.event_id, type: r.type, dedupe_key: r.dedupe_key, created_at: iso(r.event_created_at)!, data: JSON.parse(r.data) as unknown },
  }));
}

/**
 * Move `subject` (e.g. `breaker:<endpoint>`) to `state` for the whole fleet, by compare-and-set:
 * of processes seeing the same change, the first moves it and gets the new version; the others
 * (it is already in that state) get undefined. A new subject starts at version 1 in `state`.
 * @returns the version after the change, or undefined when the subject was already in `state`.
 */
export async function transitionAlertState(db: Kysely<Database>, subject: string, state: string, now = Date.now()): Promise<number | undefined> {
  const ins = await db.insertInto('alert_state').values({ subject, state, version: 1, updated_at: now }).onConflict((oc) => oc.column('subject').doNothing()).executeTakeFirst();
  if (Number(ins.numInsertedOrUpdatedRows ?? 0n) > 0) return 1;
  for (let i = 0; i < 5; i++) {
    const row = await db.selectFrom('alert_state').select(['state', 'version']).where('subject', '=', subject).executeTakeFirst();
    if (!row || row.state === state) return undefined;
    const res = await db.updateTable('alert_state').set({ state, version: Number(row.version) + 1, updated_at: now }).where('subject', '=', subject).where('version', '=', row.version).executeTakeFirst();
    if (Number(res.numUpdatedRows) > 0) return Number(row.version) + 1;
  }
  return undefined;
}

/**
 * Delete alert events and deliveries older than `retentionDays` (config `alerts.retention_days`;
 * pending deliveries stay), run by the retention purge.
 * @returns how many events and deliveries were deleted.
 */
export async function purgeExpiredAlerts(db: Kysely<Database>, retentionDays: number, now = Date.now()): Promise<number> {
  const cutoff = now - retentionDays * 86_400_000;
  const d = await db.deleteFrom('alert_deliveries').where('created_at', '<', cutoff).where('status', '!=', 'pending').executeTakeFirst();
  const e = await db
    .deleteFrom('alert_events')
    .where('created_at', '<', cutoff)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('alert_deliveries').select('alert_deliveries.id').whereRef('alert_deliveries.event_id', '=', 'alert_events.id'))))
    .executeTakeFirst();
  return Number(d.numDeletedRows) + Number(e.numDeletedRows);
}
