import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

const DAY_MS = 86_400_000;
/** Rows deleted per statement by the purge. */
const PURGE_BATCH = 2_000;

/** A stored response as the Responses adapter keeps it (the `body` column, parsed). */
export interface StoredResponse {
  /** The Responses API object as it was sent to the client. */
  response: Record<string, unknown>;
  /**
   * The input items it answered, those of every earlier response of its `previous_response_id`
   * chain first (so continuing a conversation is one read).
   */
  input: unknown[];
  /**
   * The response cache entry (its key) the response was stored in or answered from, when the
   * request used the cache: deleting the response deletes it.
   */
  cache_key?: string;
}

/**
 * Responses API objects kept for `GET /v1/responses/{id}` and `previous_response_id`, in the
 * gateway's database (portable kysely queries: SQLite and PostgreSQL). A response is stored only
 * when the request's retention keeps text, and expires with it.
 */
export class StoredResponseStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Keep one response. `retention` is the request's retention in days (`none` stores nothing);
   * `createdAt` unix ms.
   */
  async save(id: string, keyId: string | null, createdAt: number, retention: 'none' | number, value: StoredResponse): Promise<void> {
    if (retention === 'none') return;
    await this.db
      .insertInto('stored_responses')
      .values({ id, key_id: keyId, created_at: createdAt, expires_at: createdAt + retention * DAY_MS, body: JSON.stringify(value) })
      .execute();
  }

  /**
   * The stored response `id` if the key `keyId` (null: the admin key) owns it and its retention
   * has not run out; undefined otherwise (another key's response reads as absent).
   */
  async get(id: string, keyId: string | null, now: number = Date.now()): Promise<StoredResponse | undefined> {
    let q = this.db.selectFrom('stored_responses').select(['body', 'expires_at']).where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const row = await q.executeTakeFirst();
    if (!row || (row.expires_at !== null && Number(row.expires_at) < now)) return undefined;
    return JSON.parse(row.body) as StoredResponse;
  }

  /**
   * Remove the text (`content`) of the generation record of response `id` (the same id) of key
   * `keyId`, keeping the record. @returns whether the record was found.
   */
  async clearRecordText(id: string, keyId: string | null): Promise<boolean> {
    let q = this.db.updateTable('generations').set({ content: null }).where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const res = await q.executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Delete a key's stored response. @returns whether one was deleted. */
  async delete(id: string, keyId: string | null): Promise<boolean> {
    let q = this.db.deleteFrom('stored_responses').where('id', '=', id);
    q = keyId === null ? q.where('key_id', 'is', null) : q.where('key_id', '=', keyId);
    const res = await q.executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}

/**
 * Delete stored responses whose retention has run out (`expires_at < now`), in batches.
 * @returns how many were deleted.
 */
export async function purgeExpiredResponses(db: Kysely<Database>, now: number = Date.now()): Promise<number> {
  let purged = 0;
  for (;;) {
    const res = await db
      .deleteFrom('stored_responses')
      .where('id', 'in', (eb) => eb.selectFrom('stored_responses').select('id').where('expires_at', '<', now).limit(PURGE_BATCH))
      .executeTakeFirst();
    const n = Number(res.numDeletedRows);
    purged += n;
    if (n < PURGE_BATCH) return purged;
  }
}
