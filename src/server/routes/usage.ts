import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { decodeCursor, GENERATION_STATUSES, searchGenerations, type GenerationStatus } from '../../store/generation-search.js';
import type { ApiKey } from '../../store/keys.js';
import type { Database } from '../../store/schema.js';
import { DAY_MS, queryUsage, USAGE_BUCKETS, USAGE_GROUPS, type UsageGroupBy, USAGE_MAX_RANGE_DAYS } from '../../store/usage-queries.js';
import { keysByTeam } from '../../store/teams.js';
import { teamScope } from '../sso/roles.js';
import type { Session } from '../sso/session-cookie.js';
import { generationObject } from './generation.js';

export type Query = Record<string, unknown>;

/** Longest range per bucket size (days): hourly rollups are read row by row. */
const MAX_RANGE_DAYS = USAGE_MAX_RANGE_DAYS;
/** The `key_id` value that means the admin key's own requests. */
const ADMIN_KEY_ID = 'admin';

export function bad(param: string, message: string): GatewayError {
  return new GatewayError('invalid_request', `${param}: ${message}`, { param });
}

/** Refuse parameters the route does not know (a typo would otherwise silently widen a query). */
export function onlyKnown(query: Query, known: readonly string[]): void {
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) throw bad(name, `unknown query parameter (known: ${known.join(', ')})`);
  }
}

/** A single non-empty string parameter; absent and empty are the same. */
export function text(query: Query, name: string): string | undefined {
  const v = query[name];
  if (v === undefined || v === '') return undefined;
  if (typeof v !== 'string') throw bad(name, 'give it once');
  if (v.length > 256) throw bad(name, 'at most 256 characters');
  return v;
}

export function oneOf<T extends string>(query: Query, name: string, values: readonly T[]): T | undefined {
  const v = text(query, name);
  if (v === undefined) return undefined;
  if (!(values as readonly string[]).includes(v)) throw bad(name, `must be one of ${values.join(', ')} (got ${JSON.stringify(v)})`);
  return v as T;
}

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** A time: unix milliseconds, or ISO 8601 (a date or date-time; without an offset it is UTC). */
export function time(query: Query, name: string): number | undefined {
  const v = text(query, name);
  if (v === undefined) return undefined;
  let ms = NaN;
  if (/^\d{1,15}$/.test(v)) ms = Number(v);
  else {
    const m = ISO_8601.exec(v);
    if (m) ms = Date.parse(m[4] === undefined ? `${v.slice(0, 10)}T00:00:00Z` : m[7] === undefined ? `${v.replace(' ', 'T')}Z` : v.replace(' ', 'T'));
  }
  if (!Number.isFinite(ms)) throw bad(name, `must be ISO 8601 (2025-06-01T12:00:00Z) or unix milliseconds (got ${JSON.stringify(v)})`);
  return ms;
}

/**
 * The `key_id` a query may read. A key other than the admin key sees only its own requests: its
 * own id is implied, and naming another key is answered like a key that does not exist. The
 * admin key may name any key, or `admin` for its own requests (null).
 */
export function keyFilter(query: Query, key: ApiKey): string | null | undefined {
  const asked = text(query, 'key_id');
  if (!key.isAdmin) {
    if (asked !== undefined && asked !== key.id) throw new GatewayError('not_found', `no key ${JSON.stringify(asked)} visible to this key`, { param: 'key_id' });
    return key.id;
  }
  if (asked === ADMIN_KEY_ID) return null;
  return asked;
}

/**
 * The `team` a usage query reads (its id): the admin key may name any; another key only its
 * own team (its own requests are implied anyway).
 */
function teamFilter(query: Query, key: ApiKey): string | undefined {
  const asked = text(query, 'team');
  if (asked === undefined || key.isAdmin) return asked;
  if (asked !== key.team?.id) throw new GatewayError('not_found', `no team ${JSON.stringify(asked)} visible to this key`, { param: 'team' });
  return asked;
}

/**
 * The team a signed-in user with team roles reads (single sign-on): the `team` asked, which
 * must be one of theirs, or their only team.
 * @throws GatewayError `not_found` (param `team`) for a team out of reach; `invalid_request`
 * (param `team`) when they reach several and name none; `role_forbidden` when they reach none.
 */
async function sessionTeam(db: Kysely<Database>, session: Session, asked: string | undefined): Promise<string> {
  const scope = await teamScope(db, session);
  if (asked !== undefined) {
    if (!scope.read.has(asked)) throw new GatewayError('not_found', `no team ${JSON.stringify(asked)} visible to ${session.name}`, { param: 'team' });
    return asked;
  }
  if (scope.read.size === 1) return [...scope.read][0]!;
  if (scope.read.size === 0) throw new GatewayError('role_forbidden', `the roles of ${session.name} (${session.roles.join(', ')}) name no existing team`);
  throw new GatewayError('invalid_request', `team: name one of your teams (${[...scope.read].join(', ')})`, { param: 'team' });
}

/** A team-role session (not the admin role), or null. */
const teamSession = (req: { apiKey: ApiKey; ssoSession: Session | null }): Session | null => (req.apiKey.isAdmin ? null : req.ssoSession);

const USAGE_PARAMS = ['from', 'to', 'bucket', 'group_by', 'model', 'provider', 'key_id', 'tag', 'team'] as const;
const SEARCH_PARAMS = ['model', 'provider', 'status', 'key_id', 'tag', 'session', 'from', 'to', 'limit', 'cursor'] as const;

/**
 * `GET /v1/usage`: aggregates by time bucket and group from the hourly rollups.
 * `GET /v1/generations`: generation search, newest first, cursor paged.
 * A key sees only its own requests; the admin key sees all.
 */
export function registerUsageRoutes(app: FastifyInstance, _rt: () => GatewayRuntime, db: Kysely<Database>): void {
  app.get<{ Querystring: Query }>('/v1/usage', { config: { ownsPath: true, teamRoles: true } }, async (req) => {
    const q = req.query;
    onlyKnown(q, USAGE_PARAMS);
    const session = teamSession(req);
    const bucket = oneOf(q, 'bucket', USAGE_BUCKETS) ?? 'hour';
    const group = oneOf(q, 'group_by', [...USAGE_GROUPS, 'none'] as const);
    const groupBy: UsageGroupBy = group === undefined || group === 'none' ? null : group;
    const to = time(q, 'to') ?? Date.now();
    const from = time(q, 'from') ?? to - DAY_MS;
    if (from >= to) throw bad('from', 'must be before to');
    if (to - from > MAX_RANGE_DAYS[bucket] * DAY_MS) {
      const most = bucket === 'minute' ? `${MAX_RANGE_DAYS[bucket] * 24} hours` : `${MAX_RANGE_DAYS[bucket]} days`;
      throw bad('from', `the range is longer than ${most}, the most for bucket=${bucket}${bucket === 'day' ? '' : ` (use bucket=${bucket === 'minute' ? 'hour' : 'day'})`}`);
    }
    return queryUsage(db, {
      from,
      to,
      bucket,
      groupBy,
      model: text(q, 'model'),
      provider: text(q, 'provider'),
      keyId: session ? text(q, 'key_id') : keyFilter(q, req.apiKey),
      tag: text(q, 'tag'),
      teamId: session ? await sessionTeam(db, session, text(q, 'team')) : teamFilter(q, req.apiKey),
    });
  });

  app.get<{ Querystring: Query }>('/v1/generations', { config: { ownsPath: true, teamRoles: true } }, async (req) => {
    const q = req.query;
    onlyKnown(q, SEARCH_PARAMS);
    const session = teamSession(req);
    let keyIds: string[] | undefined;
    if (session) {
      // The keys of the user's teams; a key_id outside them is answered like one that does not exist.
      const [scope, members] = await Promise.all([teamScope(db, session), keysByTeam(db)]);
      keyIds = [...scope.read].flatMap((t) => members.get(t) ?? []);
      const asked = text(q, 'key_id');
      if (asked !== undefined && !keyIds.includes(asked)) throw new GatewayError('not_found', `no key ${JSON.stringify(asked)} visible to ${session.name}`, { param: 'key_id' });
      if (keyIds.length === 0) return { data: [], next_cursor: null };
    }
    const limitText = text(q, 'limit');
    let limit = 50;
    if (limitText !== undefined) {
      if (!/^\d{1,4}$/.test(limitText) || Number(limitText) < 1 || Number(limitText) > 200) throw bad('limit', `must be an integer from 1 to 200 (got ${JSON.stringify(limitText)})`);
      limit = Number(limitText);
    }
    const cursor = text(q, 'cursor');
    if (cursor !== undefined && !decodeCursor(cursor)) throw bad('cursor', 'is not a cursor from a previous page (next_cursor)');
    const from = time(q, 'from');
    const to = time(q, 'to');
    if (from !== undefined && to !== undefined && from >= to) throw bad('from', 'must be before to');
    const page = await searchGenerations(db, {
      model: text(q, 'model'),
      provider: text(q, 'provider'),
      status: oneOf<GenerationStatus>(q, 'status', GENERATION_STATUSES),
      keyId: session ? text(q, 'key_id') : keyFilter(q, req.apiKey),
      keyIds,
      tag: text(q, 'tag'),
      session: text(q, 'session'),
      from,
      to,
      limit,
      cursor,
    });
    return {
      data: page.rows.map((row) => {
        const { content: _content, ...rest } = generationObject({ ...row, content: null });
        return rest;
      }),
      next_cursor: page.next_cursor,
    };
  });
}
