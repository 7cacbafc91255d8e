import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { picoToUsdString } from '../../accounting/cost.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { usdToPico } from '../../limits/credit.js';
import { periodStart } from '../../limits/limit-store.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { Database } from '../../store/schema.js';
import { audited, teamSnapshot } from '../../store/audit-log.js';
import { createTeam, deleteTeam, getTeam, keysByTeam, listTeams, teamSettingsSchema, updateTeam, type Team, type TeamSettings } from '../../store/teams.js';
import type { KeyResolver } from '../auth.js';
import { actorOf, checkAllowedModels, limitReset, parseBody, rateLimit, requireAdmin, retention, toUsdString, usd } from './admin-input.js';

/** Body of `POST /v1/teams` and `PATCH /v1/teams/{id}`: the key API's field names and types. */
const teamBody = z
  .object({
    name: z.string().min(1).max(200),
    limit: usd.nullable().optional(),
    limit_reset: limitReset.nullable().optional(),
    rate_limit: rateLimit.nullable().optional(),
    allowed_models: z.array(z.string().min(1)).max(500).optional(),
    retention: retention.nullable().optional(),
  })
  .strict();

function mergeSettings(current: TeamSettings, b: Partial<z.infer<typeof teamBody>>): TeamSettings {
  return teamSettingsSchema.parse({
    limit: b.limit === undefined ? current.limit : b.limit === null ? null : toUsdString(b.limit),
    limit_reset: b.limit_reset === undefined ? current.limit_reset : (b.limit_reset ?? 'never'),
    rate_limit: b.rate_limit === undefined ? current.rate_limit : b.rate_limit === null ? {} : { ...current.rate_limit, ...b.rate_limit },
    allowed_models: b.allowed_models ?? current.allowed_models,
    retention: b.retention === undefined ? current.retention : b.retention,
  });
}

/**
 * A team's spend in its limit period (USD strings): from the limit store when the team has a
 * budget (it includes costs settled but not yet written), else from the records' rollups of its
 * keys; the rollups stand in while the limit store cannot answer (`usage_note` says so).
 */
async function usageOf(rt: GatewayRuntime, team: Team) {
  const s = team.settings;
  const period = periodStart(s.limit_reset, Date.now());
  let note: string | undefined;
  let spent: bigint;
  if (s.limit === null) spent = await rt.loadTeamSpent(team.id, period);
  else {
    try {
      spent = await rt.limits.spent(team.id, period, () => rt.loadTeamSpent(team.id, period));
    } catch (err) {
      if (!(err instanceof GatewayError) || err.code !== 'limits_unavailable') throw err;
      note = 'the limit store is unavailable: usage is read from the written records and may miss the latest costs';
      spent = await rt.loadTeamSpent(team.id, period);
    }
  }
  const limit = s.limit === null ? null : usdToPico(s.limit);
  return { usage: picoToUsdString(spent), limit_remaining: limit === null ? null : picoToUsdString(limit > spent ? limit - spent : 0n), ...(note === undefined ? {} : { usage_note: note }) };
}

/** The public shape of a team: its settings, its keys' ids, and its spend in the current period. */
async function teamObject(rt: GatewayRuntime, team: Team, keys: readonly string[]) {
  const s = team.settings;
  return {
    id: team.id,
    name: team.name,
    limit: s.limit,
    limit_reset: s.limit_reset,
    rate_limit: { requests_per_minute: s.rate_limit.requests_per_minute, tokens_per_minute: s.rate_limit.tokens_per_minute },
    allowed_models: s.allowed_models,
    retention: s.retention,
    keys,
    created_at: new Date(team.createdAt).toISOString(),
    ...(await usageOf(rt, team)),
  };
}

/**
 * Team management (admin key, issue 23 item 1): `GET/POST /v1/teams`,
 * `GET/PATCH/DELETE /v1/teams/{id}`. A change clears the key caches of every process through
 * the key-change path (keys are cached with their team), as a key change does.
 */
export function registerTeamRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>, resolver: KeyResolver): void {
  const what = 'team management';
  const nameTaken = async (name: string, except?: string) => {
    const other = (await listTeams(db)).find((t) => t.name === name && t.id !== except);
    if (other) throw new GatewayError('invalid_request', `name: a team is already named ${JSON.stringify(name)} (${other.id})`, { param: 'name' });
  };
  const loadOr404 = async (id: string) => {
    const team = await getTeam(db, id);
    if (!team) throw new GatewayError('not_found', `no team ${JSON.stringify(id)}`, { param: 'id' });
    return team;
  };

  app.get('/v1/teams', async (req) => {
    requireAdmin(req, what);
    const [teams, members] = await Promise.all([listTeams(db), keysByTeam(db)]);
    return { data: await Promise.all(teams.map((t) => teamObject(rt(), t, members.get(t.id) ?? []))) };
  });

  app.post('/v1/teams', async (req, reply) => {
    requireAdmin(req, what);
    const body = parseBody(teamBody, req.body);
    checkAllowedModels(rt(), body.allowed_models);
    await nameTaken(body.name);
    const team = await audited(db, actorOf(req), async (trx) => {
      const made = await createTeam(trx, body.name, mergeSettings(teamSettingsSchema.parse({}), body));
      return { result: made, change: { action: 'team.create', targetType: 'team', targetId: made.id, before: null, after: teamSnapshot(made) } };
    });
    reply.code(201);
    return { data: await teamObject(rt(), team, []) };
  });

  app.get<{ Params: { id: string } }>('/v1/teams/:id', async (req) => {
    requireAdmin(req, what);
    const team = await loadOr404(req.params.id);
    return { data: await teamObject(rt(), team, (await keysByTeam(db)).get(team.id) ?? []) };
  });

  app.patch<{ Params: { id: string } }>('/v1/teams/:id', async (req) => {
    requireAdmin(req, what);
    const current = await loadOr404(req.params.id);
    const body = parseBody(teamBody.partial(), req.body);
    checkAllowedModels(rt(), body.allowed_models);
    if (body.name !== undefined) await nameTaken(body.name, current.id);
    const updated = await audited(db, actorOf(req), async (trx) => {
      const after = await updateTeam(trx, current.id, { name: body.name, settings: mergeSettings(current.settings, body) });
      return { result: after, change: after && { action: 'team.update', targetType: 'team', targetId: current.id, before: teamSnapshot(current), after: teamSnapshot(after) } };
    });
    resolver.invalidate();
    return { data: await teamObject(rt(), updated!, (await keysByTeam(db)).get(current.id) ?? []) };
  });

  app.delete<{ Params: { id: string } }>('/v1/teams/:id', async (req) => {
    requireAdmin(req, what);
    const detached = await audited(db, actorOf(req), async (trx) => {
      const before = await getTeam(trx, req.params.id);
      const n = before ? await deleteTeam(trx, before.id) : undefined;
      return { result: n, change: before && n !== undefined ? { action: 'team.delete', targetType: 'team', targetId: before.id, before: { ...teamSnapshot(before), keys_detached: n }, after: null } : undefined };
    });
    if (detached === undefined) throw new GatewayError('not_found', `no team ${JSON.stringify(req.params.id)}`, { param: 'id' });
    resolver.invalidate();
    return { data: { id: req.params.id, deleted: true, keys_detached: detached } };
  });
}
