import type { Kysely } from 'kysely';
import type { GenerationWriter } from './generation-writer.js';
import type { Database, GenerationsTable } from './schema.js';

/**
 * One generation record by id (`GET /v1/generation`): the writer's queued row when it is not
 * written yet, else the `generations` row; undefined when neither has it. Whose record it is
 * (the key's own, or any for the admin key) is the caller's check. A database error is thrown
 * as the driver threw it.
 */
export async function findGeneration(db: Kysely<Database>, writer: Pick<GenerationWriter, 'pending'>, id: string): Promise<GenerationsTable | undefined> {
  return writer.pending(id) ?? (await db.selectFrom('generations').selectAll().where('id', '=', id).executeTakeFirst());
}
