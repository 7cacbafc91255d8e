import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { picoToUsdString } from '../../accounting/cost.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { usdToPico } from '../../limits/credit.js';
import { periodStart } from '../../limits/limit-store.js';
import { keySettingsSchema, type KeySettings } from '../../store/key-settings.js';
import { createKey, deleteKey, getKey, listKeys, updateKey, type ApiKey } from '../../store/keys.js';
import type { Database } from '../../store/schema.js';
import { audited, keySnapshot } from '../../store/audit-log.js';
import { resolveTeamRef } from '../../store/teams.js';
import type { KeyResolver } from '../auth.js';
import { keyInScope, keyScope, type TeamScope } from '../sso/roles.js';
import { actorOf, checkAllowedModels, limitReset, parseBody, rateLimit, retention, toUsdString, usd } from './admin-input.js';

/** Body of `POST /v1/keys` and `PATCH /v1/keys/{id}` (OpenRouter field names where they exist). */
const keyBody = z
  .object({
    name: z.string().min(1).max(200),
    limit: usd.nullable().optional(),
    limit_reset: limitReset.nullable().optional(),
    disabled: z.boolean().optional(),
    expires_at: z.string().datetime({ offset: true }).nullable().optional(),
    rate_limit: rateLimit.nullable().optional(),
    allowed_models: z.array(z.string().min(1)).max(500).optional(),
    /** MCP tool patterns (`server__tool`, `server__get_*`, `server`): see store/key-settings.ts. */
    allowed_tools: keySettingsSchema.shape.allowed_tools.removeDefault().optional(),
    max_tools: keySettingsSchema.shape.max_tools.removeDefault().optional(),
    /** MCP tool calls per minute (`tools/call` through `/mcp` and the Responses `mcp` tool); null = none. */
    mcp_calls_per_minute: keySettingsSchema.shape.mcp_calls_per_minute.removeDefault().optional(),
    retention: retention.nullable().optional(),
    /** The team (its id or name); null = none. Its budget, rate limits and allowed models apply too. */
    team: z.string().min(1).max(200).nullable().optional(),
    /** Caps on each end user (`user`, `x-op-user`) of the key; null = none. */
    end_user_limits: z
      .object({ requests_per_minute: z.number().int().min(1).max(1_000_000_000).nullable().optional(), tokens_per_minute: z.number().int().min(1).max(1_000_000_000_000).nullable().optional(), usd_per_day: usd.nullable().optional() })
      .strict()
      .nullable()
      .optional(),
    /** Cache every answer of the key: true, or a TTL in seconds; null/false = only when asked. */
    cache: z.union([z.boolean(), z.number().int().min(1).max(30 * 86_400)]).nullable().optional(),
  })
  .strict();

function mergeSettings(current: KeySettings, b: Partial<z.infer<typeof keyBody>>): KeySettings {
  return keySettingsSchema.parse({
    limit: b.limit === undefined ? current.limit : b.limit === null ? null : toUsdString(b.limit),
    limit_reset: b.limit_reset === undefined ? current.limit_reset : (b.limit_reset ?? 'never'),
    rate_limit: b.rate_limit === undefined ? current.rate_limit : b.rate_limit === null ? {} : { ...current.rate_limit, ...b.rate_limit },
    allowed_models: b.allowed_models ?? current.allowed_models,
    allowed_tools: b.allowed_tools ?? current.allowed_tools,
    max_tools: b.max_tools === undefined ? current.max_tools : b.max_tools,
    mcp_calls_per_minute: b.mcp_calls_per_minute === undefined ? current.mcp_calls_per_minute : b.mcp_calls_per_minute,
    retention: b.retention === undefined ? current.retention : b.retention,
    cache: b.cache === undefined ? current.cache : b.cache,
    end_user_limits: b.end_user_limits === undefined ? current.end_user_limits : b.end_user_limits === null ? {} : mergeEndUserLimits(current.end_user_limits, b.end_user_limits),
  });
}

function mergeEndUserLimits(current: KeySettings['end_user_limits'], b: NonNullable<z.infer<typeof keyBody>['end_user_limits']>): KeySettings['end_user_limits'] {
  const perDay = b.usd_per_day === undefined ? current.usd_per_day : b.usd_per_day === null ? null : toUsdString(b.usd_per_day);
  return { requests_per_minute: b.requests_per_minute === undefined ? current.requests_per_minute : b.requests_per_minute, tokens_per_minute: b.tokens_per_minute === undefined ? current.tokens_per_minute : b.tokens_per_minute, usd_per_day: perDay };
}

/**
 * The team id a body's `team` names (its id or name): undefined when absent, null for none.
 * @throws GatewayError `invalid_request` (param `team`) when no team has that id or name.
 */
async function teamOf(db: Kysely<Database>, team: string | null | undefined): Promise<string | null | undefined> {
  if (team === undefined || team === null) return team;
  const found = await resolveTeamRef(db, team);
  if (!found) throw new GatewayError('invalid_request', `team: no team ${JSON.stringify(team)} (create it with POST /v1/teams)`, { param: 'team' });
  return found.id;
}

/**
 * The team a team admin's new or moved key goes to: the body's `team` (id or name), which must
 * be a team the session manages; without one, the session's only managed team.
 * @throws GatewayError `invalid_request` (param `team`) when it is needed and missing or unknown;
 * `role_forbidden` (403) for a team the session does not manage (or `null`: out of every team).
 */
async function managedTeamOf(db: Kysely<Database>, scope: TeamScope, team: string | null | undefined): Promise<string> {
  if (team === undefined) {
    if (scope.manage.size === 1) return [...scope.manage][0]!;
    throw new GatewayError('invalid_request', `team: name the team of the key (you manage ${scope.manage.size} teams)`, { param: 'team' });
  }
  if (team === null) throw new GatewayError('role_forbidden', 'a team admin may not take a key out of its team', { param: 'team' });
  const id = await teamOf(db, team);
  if (!scope.manage.has(id!)) throw new GatewayError('role_forbidden', `you do not manage team ${JSON.stringify(team)}`, { param: 'team' });
  return id!;
}

/** Spend of a key (USD strings) for its limit period and the usual windows. */
async function usageOf(rt: GatewayRuntime, key: ApiKey) {
  const now = Date.now();
  const s = key.settings;
  const load = (start: number) => () => rt.loadSpent(key.id, start);
  const period = periodStart(s.limit_reset, now);
  // With a limit the limit store is the truth (it includes costs settled but not yet written);
  // without one nothing settles there, so read the records' rollups.
  // When the limit store cannot answer (Redis down or frozen), the records' rollups stand in,
  // so operators can still list, read and update keys; `usage_note` says so.
  let note: string | undefined;
  const fromStore = async (): Promise<bigint> => {
    try {
      return await rt.limits.spent(key.id, period, load(period));
    } catch (err) {
      if (!(err instanceof GatewayError) || err.code !== 'limits_unavailable') throw err;
      note = 'the limit store is unavailable: usage is read from the written records and may miss the latest costs';
      return rt.loadSpent(key.id, period);
    }
  };
  const spent = s.limit !== null ? await fromStore() : await rt.loadSpent(key.id, period);
  const [daily, weekly, monthly, all] = await Promise.all(
    (['daily', 'weekly', 'monthly', 'never'] as const).map((r) => (r === s.limit_reset ? Promise.resolve(spent) : rt.loadSpent(key.id, periodStart(r, now)))),
  );
  const limit = s.limit === null ? null : usdToPico(s.limit);
  return {
    usage: picoToUsdString(spent),
    usage_daily: picoToUsdString(daily!),
    usage_weekly: picoToUsdString(weekly!),
    usage_monthly: picoToUsdString(monthly!),
    usage_total: picoToUsdString(all!),
    limit_remaining: limit === null ? null : picoToUsdString(limit > spent ? limit - spent : 0n),
    ...(note === undefined ? {} : { usage_note: note }),
  };
}

/** Usage of a key created a moment ago: nothing spent (no limit store or database read). */
const NO_USAGE = { usage: '0', usage_daily: '0', usage_weekly: '0', usage_monthly: '0', usage_total: '0' };

/** The public shape of a key (never its secret). Money in USD decimal strings. */
async function keyObject(rt: GatewayRuntime, key: ApiKey, fresh = false) {
  const s = key.settings;
  const usage = fresh ? { ...NO_USAGE, limit_remaining: s.limit === null ? null : picoToUsdString(usdToPico(s.limit)) } : await usageOf(rt, key);
  return {
    id: key.id,
    name: key.name,
    label: `${key.prefix}…`,
    disabled: key.disabled,
    limit: s.limit,
    limit_reset: s.limit_reset,
    rate_limit: { requests_per_minute: s.rate_limit.requests_per_minute, tokens_per_minute: s.rate_limit.tokens_per_minute },
    allowed_models: s.allowed_models,
    allowed_tools: s.allowed_tools,
    max_tools: s.max_tools,
    mcp_calls_per_minute: s.mcp_calls_per_minute,
    retention: s.retention,
    cache: s.cache,
    team: key.team?.id ?? null,
    end_user_limits: s.end_user_limits,
    expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    created_at: new Date(key.createdAt).toISOString(),
    ...usage,
  };
}

/** USD decimal string → JSON number of USD (OpenRouter's type; display only). */
const usdNumber = (v: string): number => Number(v);

/**
 * `GET /v1/key` in OpenRouter's shape (`@openrouter/sdk` `getCurrentKeyMetadata`): money as
 * numbers of USD (the exact decimals stay in `/v1/keys`), `rate_limit` with OpenRouter's
 * `interval`/`requests`/`note` beside the gateway's per-minute limits (`requests: -1` without
 * one), no BYOK, free tier, workspace or data regions (zero, false, null, empty).
 * @see https://openrouter.ai/docs/api-reference/api-keys/get-current-key
 */
function openRouterKeyFields(own: Awaited<ReturnType<typeof keyObject>> | null) {
  const rpm = own?.rate_limit.requests_per_minute ?? null;
  return {
    usage: own ? usdNumber(own.usage) : 0,
    usage_daily: own ? usdNumber(own.usage_daily) : 0,
    usage_weekly: own ? usdNumber(own.usage_weekly) : 0,
    usage_monthly: own ? usdNumber(own.usage_monthly) : 0,
    limit: own?.limit == null ? null : usdNumber(own.limit),
    limit_remaining: own?.limit_remaining == null ? null : usdNumber(own.limit_remaining),
    limit_reset: own?.limit_reset ?? null,
    byok_usage: 0,
    byok_usage_daily: 0,
    byok_usage_weekly: 0,
    byok_usage_monthly: 0,
    include_byok_in_limit: false,
    is_free_tier: false,
    is_management_key: false,
    is_provisioning_key: false,
    allowed_data_regions: [],
    creator_user_id: null,
    organization_id: null,
    workspace_id: null,
    free_model_daily_requests: { limit: 0, remaining: 0, used: 0 },
    rate_limit: {
      interval: '1m',
      requests: rpm ?? -1,
      note: rpm === null ? 'no request rate limit on this key' : 'requests per minute (x-ratelimit-* headers carry the live counts)',
      requests_per_minute: rpm,
      tokens_per_minute: own?.rate_limit.tokens_per_minute ?? null,
    },
  };
}

/**
 * Key management (admin key): `GET/POST /v1/keys`, `GET/PATCH/DELETE /v1/keys/{id}`; and
 * `GET /v1/key` for the calling key's own limits and usage.
 */
export function registerKeyRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>, resolver: KeyResolver): void {
  app.get('/v1/key', { config: { ownsPath: true } }, async (req) => {
    const key = req.apiKey;
    if (key.isAdmin) return { data: { ...openRouterKeyFields(null), id: 'admin', name: 'admin', label: 'admin', is_admin: true, is_management_key: true, is_provisioning_key: true } };
    const own = await keyObject(rt(), key);
    return { data: { ...own, ...openRouterKeyFields(own), is_admin: false } };
  });

  // Single sign-on: team roles reach these routes (teamRoles), narrowed to their teams (sso/roles.ts).
  const teamRoles = { teamRoles: true };

  app.get('/v1/keys', { config: teamRoles }, async (req) => {
    const scope = await keyScope(req, db, 'read');
    const keys = (await listKeys(db)).filter((k) => keyInScope(scope, k.team?.id, 'read'));
    return { data: await Promise.all(keys.map((k) => keyObject(rt(), k))) };
  });

  app.post('/v1/keys', { config: teamRoles }, async (req, reply) => {
    const scope = await keyScope(req, db, 'manage');
    const body = parseBody(keyBody, req.body);
    checkAllowedModels(rt(), body.allowed_models);
    const settings = mergeSettings(keySettingsSchema.parse({}), body);
    const expires = body.expires_at ? Date.parse(body.expires_at) : null;
    const teamId = scope === null ? await teamOf(db, body.team) : await managedTeamOf(db, scope, body.team);
    // The key and its audit row commit together.
    const { created, secret } = await audited(db, actorOf(req), async (trx) => {
      const made = await createKey(trx, body.name, expires, settings, teamId ?? null);
      const key = body.disabled ? ((await updateKey(trx, made.key.id, { disabled: true })) ?? made.key) : made.key;
      return { result: { created: key, secret: made.secret }, change: { action: 'key.create', targetType: 'key', targetId: key.id, before: null, after: keySnapshot(key) } };
    });
    // The secret is shown only in this answer: a key whose answer cannot be sent is removed
    // again, and the answer needs nothing that can fail (no limit store: a new key spent nothing).
    try {
      const data = await keyObject(rt(), created, true);
      reply.code(201);
      return { data, key: secret };
    } catch (err) {
      // Removed with its audit row, so the log does not show a key that never was usable as alive.
      await audited(db, actorOf(req), async (trx) => {
        const ok = await deleteKey(trx, created.id);
        return { result: ok, change: ok ? { action: 'key.delete', targetType: 'key', targetId: created.id, before: keySnapshot(created), after: null } : undefined };
      }).catch(() => {});
      throw err;
    }
  });

  /** The key, if the scope may `need` it: a key out of sight is answered like one that does not exist. */
  const loadOr404 = async (id: string, scope: TeamScope | null = null, need: 'read' | 'manage' = 'read') => {
    const key = await getKey(db, id);
    if (!key || !keyInScope(scope, key.team?.id, 'read')) throw new GatewayError('not_found', `no key ${JSON.stringify(id)}`, { param: 'id' });
    if (!keyInScope(scope, key.team?.id, need)) throw new GatewayError('role_forbidden', `key ${id} is in a team you may only read (viewer)`);
    return key;
  };

  app.get<{ Params: { id: string } }>('/v1/keys/:id', { config: teamRoles }, async (req) => {
    const scope = await keyScope(req, db, 'read');
    return { data: await keyObject(rt(), await loadOr404(req.params.id, scope)) };
  });

  app.patch<{ Params: { id: string } }>('/v1/keys/:id', { config: teamRoles }, async (req) => {
    const scope = await keyScope(req, db, 'manage');
    const current = await loadOr404(req.params.id, scope, 'manage');
    const body = parseBody(keyBody.partial(), req.body);
    checkAllowedModels(rt(), body.allowed_models);
    const teamId = scope === null || body.team === undefined ? await teamOf(db, body.team) : await managedTeamOf(db, scope, body.team);
    const updated = await audited(db, actorOf(req), async (trx) => {
      const after = await updateKey(trx, current.id, {
        teamId,
        name: body.name,
        disabled: body.disabled,
        expiresAt: body.expires_at === undefined ? undefined : body.expires_at === null ? null : Date.parse(body.expires_at),
        settings: mergeSettings(current.settings, body),
      });
      return { result: after, change: after && { action: 'key.update', targetType: 'key', targetId: current.id, before: keySnapshot(current), after: keySnapshot(after) } };
    });
    resolver.invalidate();
    return { data: await keyObject(rt(), updated!) };
  });

  app.delete<{ Params: { id: string } }>('/v1/keys/:id', { config: teamRoles }, async (req) => {
    const scope = await keyScope(req, db, 'manage');
    if (scope !== null) await loadOr404(req.params.id, scope, 'manage');
    const ok = await audited(db, actorOf(req), async (trx) => {
      const before = await getKey(trx, req.params.id);
      const deleted = before !== undefined && (await deleteKey(trx, before.id));
      return { result: deleted, change: deleted ? { action: 'key.delete', targetType: 'key', targetId: before.id, before: keySnapshot(before), after: null } : undefined };
    });
    if (!ok) throw new GatewayError('not_found', `no key ${JSON.stringify(req.params.id)}`, { param: 'id' });
    resolver.invalidate();
    return { data: { id: req.params.id, deleted: true } };
  });
}
