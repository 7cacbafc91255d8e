import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import { gatewayErrorOf } from './database.js';

/**
 * An app's end user (issue 23 item 2): the request's `user` field (Chat Completions,
 * Completions, Responses; Anthropic's `metadata.user_id`), else the `x-op-user` header.
 */
export interface EndUser {
  /** As the client sent it (at most 256 characters). */
  id: string;
  /** Hex SHA-256 of `id`, first 32 characters: the limit store's name for it, and the record's under retention `none`. */
  hash: string;
}

/** Most characters of an end user id (OpenAI's `user` has no documented bound; the gateway's is the session's). */
export const MAX_END_USER = 256;

/** The end user of an id (hashing it once). */
export function endUserOf(id: string): EndUser {
  return { id, hash: createHash('sha256').update(id).digest('hex').slice(0, 32) };
}

/** The limit store's id of an end user's windows and daily spend: per key (the same user of two keys is two end users). */
export const endUserLimitId = (keyId: string, u: EndUser): string => `${keyId}:user:${u.hash}`;

/**
 * The end user as a generation row keeps it: the id as sent, or `sha256:<hash>` when the
 * request's retention is `none` (the gateway keeps no text of the request then).
 */
export const recordedEndUser = (u: EndUser, retention: 'none' | number): string => (retention === 'none' ? `sha256:${u.hash}` : u.id);

/**
 * What an end user of a key spent since `periodStart` (unix ms), in picodollars: the cost of
 * the key's generations with that end user (kept as sent or hashed, see {@link recordedEndUser})
 * since then, read through the `generations_key_end_user` index. The limit store's
 * `loadSpent` for an end user's `usd_per_day`.
 * @throws GatewayError `database_unavailable` while the database is down.
 */
export async function loadEndUserSpentSince(db: Kysely<Database>, keyId: string, u: EndUser, periodStart: number): Promise<bigint> {
  const row = await db
    .selectFrom('generations')
    .select(sql<string | null>`CAST(SUM(cost_pico) AS TEXT)`.as('total'))
    .where('key_id', '=', keyId)
    .where('end_user', 'in', [u.id, `sha256:${u.hash}`])
    .where('created_at', '>=', periodStart)
    .executeTakeFirst()
    .catch((err: unknown) => {
      throw gatewayErrorOf(err);
    });
  return BigInt(row?.total ?? '0');
}
