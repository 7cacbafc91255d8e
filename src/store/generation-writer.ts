import type { Kysely } from 'kysely';
import type { Database, GenerationsTable } from './schema.js';
import { applyRollups } from './usage-rollup.js';

/** Minimal logger shape (pino-compatible). */
export interface WriterLogger {
  error(obj: object, msg: string): void;
}

/**
 * Writes generation records off the response path: rows are queued and inserted in batches
 * (one transaction per batch) every `intervalMs` or when `batchSize` rows wait. Rows still
 * queued are visible through {@link GenerationWriter.pending} so a lookup right after a
 * response finds them. `flush()` drains the queue (used at shutdown).
 */
export class GenerationWriter {
  private queue: GenerationsTable[] = [];
  private readonly byId = new Map<string, GenerationsTable>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  /** Rows written since start. */
  written = 0;
  /** Called after each batch is committed (e.g. to settle spend caches). */
  onWritten: ((rows: readonly GenerationsTable[]) => void) | undefined;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly log: WriterLogger,
    private readonly intervalMs = 50,
    private readonly batchSize = 500,
  ) {}

  /** Queue one record. */
  enqueue(row: GenerationsTable): void {
    this.queue.push(row);
    this.byId.set(row.id, row);
    if (this.queue.length >= this.batchSize) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.intervalMs);
      this.timer.unref();
    }
  }

  /** A queued (not yet written) record by id. */
  pending(id: string): GenerationsTable | undefined {
    return this.byId.get(id);
  }

  /** Write everything queued now; resolves when it is in the database. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.flushing = this.flushing.then(() => this.writeBatch());
    return this.flushing;
  }

  private async writeBatch(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        await this.db.transaction().execute(async (trx) => {
          // SQLite caps bound variables per statement; 20 rows × 35 columns stays well under.
          for (let i = 0; i < batch.length; i += 20) {
            await trx.insertInto('generations').values(batch.slice(i, i + 20)).execute();
          }
          await applyRollups(trx, batch);
        });
        this.written += batch.length;
        this.onWritten?.(batch);
      } catch (err) {
        this.log.error({ err, count: batch.length }, 'failed to write generation records');
      } finally {
        for (const row of batch) this.byId.delete(row.id);
      }
    }
  }
}
