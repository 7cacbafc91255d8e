import { sql, type Kysely } from 'kysely';
import { inTransaction } from './database.js';
import type { Database } from './schema.js';
import type { ApiKey } from './keys.js';
import type { Team } from './teams.js';
import { randomId, timePrefix } from '../util/ids.js';

/**
 * The audit log (issue 23 item 4): one append-only row per change made through the admin API,
 * the CLI or a config reload: who, when, what, and the target's values before and after, never
 * a secret. Nothing updates or deletes a row but the retention purge ({@link purgeExpiredAudit}).
 * @see docs/governance.md#audit-log
 */

/** Who made a change. */
export interface AuditActor {
  /** `admin_key` (`OP_ADMIN_KEY`), `key` (a client key), `user` (signed in to the dashboard by single sign-on), `cli` (the `opinference` CLI) or `system` (a signal, a timer). */
  type: 'admin_key' | 'key' | 'user' | 'cli' | 'system';
  /** `admin`, the key's id, the user's e-mail (else the provider's subject), `<os user>@<host>` for the CLI, or the signal (`SIGHUP`). */
  id: string;
  /** The request's `x-request-id` (API changes). */
  requestId?: string | null | undefined;
  /** The client's address (API changes). */
  sourceIp?: string | null | undefined;
}

/** One change to append. `before` is null for a creation, `after` null for a deletion. */
export interface AuditChange {
  /** `<target type>.<verb>`: `key.create`, `key.update`, `key.disable`, `key.delete`, `team.create`, `team.update`, `team.delete`, `config.reload`, `alert_webhook.create`, … */
  action: string;
  targetType: string;
  targetId: string | null;
  before: unknown;
  after: unknown;
}

/** A row as `GET /v1/audit` shows it (times ISO 8601). */
export interface AuditEntry {
  id: string;
  created_at: string;
  actor: { type: string; id: string };
  action: string;
  target: { type: string; id: string | null };
  before: unknown;
  after: unknown;
  request_id: string | null;
  source_ip: string | null;
}

/** Field names whose values are secrets or derived from one: never written to the log, at any depth. */
const SECRET_FIELDS = /^(hash|secret|key_hash|plaintext|api_key|api_keys|password|token|authorization|client_secret|private_key)$/i;

/** `value` as JSON-safe data without any {@link SECRET_FIELDS} field (a copy; bigints become strings). */
export function withoutSecrets(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) if (!SECRET_FIELDS.test(k) && v !== undefined) out[k] = withoutSecrets(v);
  return out;
}

/** A key as the audit log keeps it: its public fields and settings (never its hash or secret). */
export function keySnapshot(k: ApiKey): Record<string, unknown> {
  return { id: k.id, name: k.name, label: `${k.prefix}…`, disabled: k.disabled, expires_at: k.expiresAt === null ? null : new Date(k.expiresAt).toISOString(), team: k.team?.id ?? null, settings: k.settings };
}

/** A team as the audit log keeps it. */
export function teamSnapshot(t: Team): Record<string, unknown> {
  return { id: t.id, name: t.name, settings: t.settings };
}

/**
 * Append one row (inside the caller's transaction when `db` is one, so the change and its row
 * commit together).
 * @returns the row's id.
 */
export async function appendAudit(db: Kysely<Database>, actor: AuditActor, change: AuditChange, now = Date.now()): Promise<string> {
  const id = `aud_${timePrefix(now)}${randomId(10)}`;
  const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(withoutSecrets(v)));
  await db
    .insertInto('audit_log')
    .values({
      id,
      created_at: now,
      actor_type: actor.type,
      actor_id: actor.id.slice(0, 300),
      action: change.action,
      target_type: change.targetType,
      target_id: change.targetId,
      before: json(change.before),
      after: json(change.after),
      request_id: actor.requestId ?? null,
      source_ip: actor.sourceIp ?? null,
    })
    .execute();
  return id;
}

/**
 * Run `fn` and append the change it returns in one transaction (a transaction `db` is used as
 * it is: Kysely transactions do not nest). `fn` returns undefined to append nothing (e.g. the
 * target did not exist).
 * @returns what `fn` returned as `result`.
 */
export async function audited<T>(db: Kysely<Database>, actor: AuditActor, fn: (trx: Kysely<Database>) => Promise<{ result: T; change: AuditChange | undefined }>): Promise<T> {
  const run = async (trx: Kysely<Database>) => {
    const { result, change } = await fn(trx);
    if (change) await appendAudit(trx, actor, change);
    return result;
  };
  return inTransaction(db, run);
}

/** Filters of {@link listAudit}; times in ms since the epoch, `until` exclusive. */
export interface AuditQuery {
  action?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  actor?: string | undefined;
  since?: number | undefined;
  until?: number | undefined;
  /** 1..1000 */
  limit: number;
  /** The `next_cursor` of the previous page. */
  cursor?: string | undefined;
}

/** A page cursor: the last row's time and id, base64url. Undefined when it does not parse. */
export function decodeAuditCursor(cursor: string): { at: number; id: string } | undefined {
  const m = /^(\d{1,16}):(aud_[0-9A-Za-z]{1,40})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return m ? { at: Number(m[1]), id: m[2]! } : undefined;
}

const parseJson = (s: string | null): unknown => (s === null ? null : (JSON.parse(s) as unknown));

/**
 * Rows newest first, filtered (`action` exact, or a prefix ending in `.`: `key.` for every key
 * action; `actor` matches the actor's id).
 * @returns the page and the cursor of the next one (null on the last page).
 * @throws Error for a cursor {@link decodeAuditCursor} refuses (the route checks it first).
 */
export async function listAudit(db: Kysely<Database>, q: AuditQuery): Promise<{ data: AuditEntry[]; next_cursor: string | null }> {
  let query = db.selectFrom('audit_log').selectAll();
  // A prefix (`team.`, `catalog_model.`) compares the action's first characters: no LIKE, whose `_` and `%` would need escaping per engine.
  if (q.action !== undefined) query = q.action.endsWith('.') ? query.where(sql<boolean>`substr(action, 1, ${q.action.length}) = ${q.action}`) : query.where('action', '=', q.action);
  if (q.targetType !== undefined) query = query.where('target_type', '=', q.targetType);
  if (q.targetId !== undefined) query = query.where('target_id', '=', q.targetId);
  if (q.actor !== undefined) query = query.where('actor_id', '=', q.actor);
  if (q.since !== undefined) query = query.where('created_at', '>=', q.since);
  if (q.until !== undefined) query = query.where('created_at', '<', q.until);
  if (q.cursor !== undefined) {
    const c = decodeAuditCursor(q.cursor);
    if (!c) throw new Error('bad cursor');
    query = query.where((eb) => eb.or([eb('created_at', '<', c.at), eb.and([eb('created_at', '=', c.at), eb('id', '<', c.id)])]));
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit + 1).execute();
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  return {
    data: page.map((r) => ({
      id: r.id,
      created_at: new Date(Number(r.created_at)).toISOString(),
      actor: { type: r.actor_type, id: r.actor_id },
      action: r.action,
      target: { type: r.target_type, id: r.target_id },
      before: parseJson(r.before),
      after: parseJson(r.after),
      request_id: r.request_id,
      source_ip: r.source_ip,
    })),
    next_cursor: rows.length > q.limit && last ? Buffer.from(`${Number(last.created_at)}:${last.id}`).toString('base64url') : null,
  };
}

/**
 * Delete audit rows older than `retentionDays` (config `audit.retention_days`): the one
 * deletion of the log, run by the retention purge.
 * @returns how many rows were deleted.
 */
export async function purgeExpiredAudit(db: Kysely<Database>, retentionDays: number, now = Date.now()): Promise<number> {
  const res = await db.deleteFrom('audit_log').where('created_at', '<', now - retentionDays * 86_400_000).executeTakeFirst();
  return Number(res.numDeletedRows);
}
