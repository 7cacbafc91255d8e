import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { GatewayError } from '../../errors/gateway-error.js';
import { decodeAuditCursor, listAudit } from '../../store/audit-log.js';
import type { Database } from '../../store/schema.js';
import { badRequest, requireAdmin } from './admin-input.js';

/** A time parameter: unix milliseconds, or an ISO 8601 date-time with an offset (`2026-12-01T00:00:00Z`) or a date (UTC midnight). */
const time = z
  .string()
  .refine((v) => /^\d{1,15}$/.test(v) || (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/i.test(v) && Number.isFinite(Date.parse(v))), 'must be unix milliseconds or ISO 8601 (2026-12-01 or 2026-12-01T12:00:00Z)')
  .transform((v) => (/^\d+$/.test(v) ? Number(v) : Date.parse(v.length === 10 ? `${v}T00:00:00Z` : v)));

const short = z.string().min(1).max(256);

/** Query of `GET /v1/audit`. */
const auditQuery = z
  .object({
    /** `key.create`, or a prefix ending in `.` (`key.`). */
    action: short.optional(),
    /** `key`, `team`, `config`, `alert_webhook`; or `<type>:<id>` for one target. */
    target: short.optional(),
    /** The actor's id: `admin`, a key id, `<user>@<host>` (CLI), `SIGHUP`. */
    actor: short.optional(),
    since: time.optional(),
    until: time.optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: z.string().min(1).max(200).refine((c) => decodeAuditCursor(c) !== undefined, 'not a cursor of this list (pass next_cursor as it came)').optional(),
  })
  .strict();

/**
 * `GET /v1/audit` (admin key): the audit log, newest first (store/audit-log.ts), filtered by
 * `action`, `target`, `actor`, `since`/`until`, paged by `limit` and `cursor`. There is no route
 * that changes or deletes a row.
 */
export function registerAuditRoutes(app: FastifyInstance, db: Kysely<Database>): void {
  app.get('/v1/audit', async (req) => {
    requireAdmin(req, 'the audit log');
    const r = auditQuery.safeParse(req.query ?? {});
    if (!r.success) throw badRequest(r.error.issues);
    const q = r.data;
    if (q.since !== undefined && q.until !== undefined && q.until <= q.since) throw new GatewayError('invalid_request', 'until: must be later than since', { param: 'until' });
    const colon = q.target?.indexOf(':') ?? -1;
    const targetType = q.target === undefined ? undefined : colon === -1 ? q.target : q.target.slice(0, colon);
    const targetId = q.target === undefined || colon === -1 ? undefined : q.target.slice(colon + 1);
    return listAudit(db, { action: q.action, targetType, targetId, actor: q.actor, since: q.since, until: q.until, limit: q.limit, cursor: q.cursor });
  });
}
