import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Minimal logger shape (pino-compatible). */
export interface PurgeLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Start the periodic purge of stored text past its retention (work in progress). Returns a stop function. */
export function startRetentionPurge(_db: Kysely<Database>, _log: PurgeLogger, _intervalMs: number): () => void {
  return () => {};
}
