import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { randomId } from '../util/ids.js';
import { keySettingsSchema, parseKeySettings, type KeySettings } from './key-settings.js';
import { parseTeamSettings, type Team } from './teams.js';

/** A key as the gateway knows it (never the secret). */
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  disabled: boolean;
  createdAt: number;
  expiresAt: number | null;
  /** Whether this is the operator's `OP_ADMIN_KEY`. */
  isAdmin: boolean;
  settings: KeySettings;
  /**
   * The team the key belongs to, as it was when the key was looked up (the key cache holds it;
   * a team change clears the key caches of every process through the key-change path), or null.
   */
  team: Team | null;
}

/** Hex SHA-256 of a key secret: the only form in which secrets are stored. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A key row with its team's columns (a left join: null without a team). */
type KeyRow = Database['api_keys'] & { team_name: string | null; team_created_at: number | null; team_settings: string | null };

/** `api_keys` left-joined with `teams`: one query gives a key and its team. */
const keysWithTeams = (db: Kysely<Database>) =>
  db
    .selectFrom('api_keys')
    .leftJoin('teams', 'teams.id', 'api_keys.team_id')
    .selectAll('api_keys')
    .select(['teams.name as team_name', 'teams.created_at as team_created_at', 'teams.settings as team_settings']);

function rowToKey(r: KeyRow): ApiKey {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    disabled: r.disabled !== 0,
    createdAt: Number(r.created_at),
    expiresAt: r.expires_at === null ? null : Number(r.expires_at),
    isAdmin: false,
    settings: parseKeySettings(r.settings),
    team: r.team_id === null || r.team_name === null ? null : { id: r.team_id, name: r.team_name, createdAt: Number(r.team_created_at), settings: parseTeamSettings(r.team_settings ?? '{}') },
  };
}

/**
 * Create a key. The secret (`op-<43 base64url chars>`) is returned once and never stored.
 * @returns the key record and its secret.
 */
export async function createKey(db: Kysely<Database>, name: string, expiresAt: number | null = null, settings: Partial<KeySettings> = {}, teamId: string | null = null): Promise<{ key: ApiKey; secret: string }> {
  const secret = `op-${randomBytes(32).toString('base64url')}`;
  const row = {
    id: `key_${randomId(16)}`,
    name,
    hash: hashSecret(secret),
    prefix: secret.slice(0, 9),
    disabled: 0,
    created_at: Date.now(),
    expires_at: expiresAt,
    settings: JSON.stringify(keySettingsSchema.parse(settings)),
    team_id: teamId,
  };
  await db.insertInto('api_keys').values(row).execute();
  if (teamId !== null) return { key: (await getKey(db, row.id))!, secret };
  return { key: rowToKey({ ...row, team_name: null, team_created_at: null, team_settings: null }), secret };
}

/** Find a key by the hash of its secret. */
export async function findKeyByHash(db: Kysely<Database>, hash: string): Promise<ApiKey | undefined> {
  const row = await keysWithTeams(db).where('api_keys.hash', '=', hash).executeTakeFirst();
  return row ? rowToKey(row) : undefined;
}

/** Every key, newest first. */
export async function listKeys(db: Kysely<Database>): Promise<ApiKey[]> {
  const rows = await keysWithTeams(db).orderBy('api_keys.created_at', 'desc').execute();
  return rows.map(rowToKey);
}

/** A key reference (a name) that matches more than one key: the caller must use an id. */
export class AmbiguousKeyError extends Error {
  constructor(readonly ref: string, readonly matches: readonly ApiKey[]) {
    super(`${matches.length} keys are named ${JSON.stringify(ref)} (${matches.map((k) => k.id).join(', ')}); use the id of the one you mean`);
    this.name = 'AmbiguousKeyError';
  }
}

/**
 * The one key an operator means by `idOrName`: the key with that id, else the only key with
 * that name. Names are not unique, so a name shared by several keys is refused rather than
 * acting on all of them.
 * @returns the key, or undefined when none matches.
 * @throws AmbiguousKeyError when several keys have that name.
 */
export async function resolveKeyRef(db: Kysely<Database>, idOrName: string): Promise<ApiKey | undefined> {
  const byId = await getKey(db, idOrName);
  if (byId) return byId;
  const rows = await keysWithTeams(db).where('api_keys.name', '=', idOrName).orderBy('api_keys.created_at', 'desc').execute();
  if (rows.length > 1) throw new AmbiguousKeyError(idOrName, rows.map(rowToKey));
  return rows[0] ? rowToKey(rows[0]) : undefined;
}

/**
 * Disable a key by id or name ({@link resolveKeyRef}).
 * @returns the number of keys disabled (0 when none matched, else 1).
 * @throws AmbiguousKeyError when the name is shared by several keys (none is disabled).
 */
export async function disableKey(db: Kysely<Database>, idOrName: string): Promise<number> {
  const key = await resolveKeyRef(db, idOrName);
  if (!key) return 0;
  const res = await db.updateTable('api_keys').set({ disabled: 1 }).where('id', '=', key.id).executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** One key by id. */
export async function getKey(db: Kysely<Database>, id: string): Promise<ApiKey | undefined> {
  const row = await keysWithTeams(db).where('api_keys.id', '=', id).executeTakeFirst();
  return row ? rowToKey(row) : undefined;
}

/** Fields an update may change. */
export interface KeyUpdate {
  name?: string;
  disabled?: boolean;
  expiresAt?: number | null;
  settings?: KeySettings;
  /** The team (`teams.id`), or null for none. */
  teamId?: string | null;
}

/**
 * Update a key.
 * @returns the updated key, or undefined when no key has that id.
 */
export async function updateKey(db: Kysely<Database>, id: string, update: KeyUpdate): Promise<ApiKey | undefined> {
  const set: Partial<Database['api_keys']> = {};
  if (update.name !== undefined) set.name = update.name;
  if (update.disabled !== undefined) set.disabled = update.disabled ? 1 : 0;
  if (update.expiresAt !== undefined) set.expires_at = update.expiresAt;
  if (update.settings !== undefined) set.settings = JSON.stringify(update.settings);
  if (update.teamId !== undefined) set.team_id = update.teamId;
  if (Object.keys(set).length > 0) await db.updateTable('api_keys').set(set).where('id', '=', id).execute();
  return getKey(db, id);
}

/** Delete a key; its generations stay (their key_id then names no key). Returns whether one was deleted. */
export async function deleteKey(db: Kysely<Database>, id: string): Promise<boolean> {
  const res = await db.deleteFrom('api_keys').where('id', '=', id).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}
