import { sql, type Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from './schema.js';
import { gatewayErrorOf, inTransaction } from './database.js';
import { randomId } from '../util/ids.js';

/**
 * What a team may do, stored as JSON in `teams.settings` (issue 23 item 1). The same field names
 * and units as a key's settings (store/key-settings.ts): `limit` in USD as an exact decimal
 * string, `limit_reset`, per-minute `rate_limit`s; they hold over the sum of the team's keys.
 */
export const teamSettingsSchema = z
  .object({
    /** Budget of the team's keys together, USD as an exact decimal string; null = none. */
    limit: z.string().regex(/^\d+(\.\d{1,6})?$/, 'must be a non-negative decimal number of USD with at most 6 decimals, e.g. 1 or 0.25').nullable().default(null),
    limit_reset: z.enum(['daily', 'weekly', 'monthly', 'never']).default('never'),
    rate_limit: z
      .object({
        requests_per_minute: z.number().int().min(1).nullable().default(null),
        tokens_per_minute: z.number().int().min(1).nullable().default(null),
      })
      .strict()
      .default({}),
    /** Model ids the team's keys may use (a key's own list narrows it further); empty = all. */
    allowed_models: z.array(z.string().min(1)).default([]),
    /** Default retention of the team's keys (`none` or days), used when a key has none; null = the gateway's. */
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).nullable().default(null),
  })
  .strict();

export type TeamSettings = z.infer<typeof teamSettingsSchema>;

/** A team: a group of keys sharing a budget, rate limits, allowed models and a default retention. */
export interface Team {
  /** `team_…` */
  id: string;
  name: string;
  createdAt: number;
  settings: TeamSettings;
}

/** Parse stored team settings; broken JSON falls back to no limits (as key settings do). */
export function parseTeamSettings(json: string): TeamSettings {
  try {
    return teamSettingsSchema.parse(JSON.parse(json || '{}'));
  } catch {
    return teamSettingsSchema.parse({});
  }
}

const rowToTeam = (r: Database['teams']): Team => ({ id: r.id, name: r.name, createdAt: Number(r.created_at), settings: parseTeamSettings(r.settings) });

/** Create a team. */
export async function createTeam(db: Kysely<Database>, name: string, settings: Partial<TeamSettings> = {}): Promise<Team> {
  const row = { id: `team_${randomId(16)}`, name, created_at: Date.now(), settings: JSON.stringify(teamSettingsSchema.parse(settings)) };
  await db.insertInto('teams').values(row).execute();
  return rowToTeam(row);
}

/** Every team, oldest first. */
export async function listTeams(db: Kysely<Database>): Promise<Team[]> {
  return (await db.selectFrom('teams').selectAll().orderBy('created_at').orderBy('id').execute()).map(rowToTeam);
}

/** One team by id. */
export async function getTeam(db: Kysely<Database>, id: string): Promise<Team | undefined> {
  const row = await db.selectFrom('teams').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? rowToTeam(row) : undefined;
}

/** A team by id, else by name (names are unique). */
export async function resolveTeamRef(db: Kysely<Database>, idOrName: string): Promise<Team | undefined> {
  const row = await db.selectFrom('teams').selectAll().where((eb) => eb.or([eb('id', '=', idOrName), eb('name', '=', idOrName)])).orderBy('created_at').executeTakeFirst();
  return row ? rowToTeam(row) : undefined;
}

/** Update a team's name and/or settings. @returns the team, or undefined when none has that id. */
export async function updateTeam(db: Kysely<Database>, id: string, update: { name?: string; settings?: TeamSettings }): Promise<Team | undefined> {
  const set: Partial<Database['teams']> = {};
  if (update.name !== undefined) set.name = update.name;
  if (update.settings !== undefined) set.settings = JSON.stringify(update.settings);
  if (Object.keys(set).length > 0) await db.updateTable('teams').set(set).where('id', '=', id).execute();
  return getTeam(db, id);
}

/**
 * Delete a team; its keys stay, without a team (in one transaction, or the caller's).
 * @returns the number of keys taken out of the team, or undefined when no team has that id.
 */
export async function deleteTeam(db: Kysely<Database>, id: string): Promise<number | undefined> {
  const run = async (trx: Kysely<Database>) => {
    const detached = await trx.updateTable('api_keys').set({ team_id: null }).where('team_id', '=', id).executeTakeFirst();
    const res = await trx.deleteFrom('teams').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0 ? Number(detached.numUpdatedRows) : undefined;
  };
  // Inside the caller's transaction (the audit log's) when it is one: Kysely transactions do not nest.
  return inTransaction(db, run);
}

/** Ids of the keys of each team (`team_id` → key ids); keys without a team are left out. */
export async function keysByTeam(db: Kysely<Database>): Promise<Map<string, string[]>> {
  const rows = await db.selectFrom('api_keys').select(['id', 'team_id']).where('team_id', 'is not', null).execute();
  const out = new Map<string, string[]>();
  for (const r of rows) {
    const list = out.get(r.team_id!) ?? [];
    list.push(r.id);
    out.set(r.team_id!, list);
  }
  return out;
}

/**
 * What a team spent since `periodStart` (unix ms of an hour's start), in picodollars: the
 * `usage_hourly` cost of the keys that belong to it now (a key moved into a team brings its
 * spend of the period). The limit store's `loadSpent` for a team's budget.
 * @throws GatewayError `database_unavailable` while the database is down (see `gatewayErrorOf`).
 */
export async function loadTeamSpentSince(db: Kysely<Database>, teamId: string, periodStart: number): Promise<bigint> {
  const row = await db
    .selectFrom('usage_hourly')
    .select(sql<string | null>`CAST(SUM(cost_pico) AS TEXT)`.as('total'))
    .where('key_id', 'in', db.selectFrom('api_keys').select('id').where('team_id', '=', teamId))
    .where('hour', '>=', periodStart)
    .executeTakeFirst()
    .catch((err: unknown) => {
      throw gatewayErrorOf(err);
    });
  return BigInt(row?.total ?? '0');
}
