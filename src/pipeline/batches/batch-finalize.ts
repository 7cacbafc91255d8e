import type { Kysely } from 'kysely';
import { inOutputFile, outputLine } from '../../ingress/openai/batches/openai-batch-shapes.js';
import { finishedLines } from '../../store/batch-store.js';
import type { BatchesTable, BatchFilesTable, Database } from '../../store/schema.js';
import { randomId, timePrefix } from '../../util/ids.js';

const DAY_MS = 86_400_000;
/** Lines read per page while the output files are measured. */
const PAGE = 1_000;

/** A new file id (`file-…`, time-ordered so lists page by id). */
export const newFileId = (now = Date.now()): string => `file-${timePrefix(now)}${randomId(16)}`;

/**
 * End a batch whose lines are all finished (or closed): status `to` with its time, and for an
 * OpenAI batch its output file (lines answered 200) and error file (every other line), when
 * either has lines — both `purpose: batch_output`, their content made from the lines when read,
 * kept `retentionDays`. One transaction, conditional on the batch still being open, so of
 * several replicas finishing a batch at once one writes it.
 * @returns whether this call ended the batch.
 */
export async function finalizeBatch(db: Kysely<Database>, b: BatchesTable, to: 'completed' | 'cancelled' | 'expired', now: number, retentionDays: number): Promise<boolean> {
  const files: BatchFilesTable[] = [];
  if (b.api === 'openai') {
    let ok = 0;
    let bad = 0;
    for (let from = 0; ; ) {
      const page = await finishedLines(db, b.id, from, PAGE);
      for (const l of page) {
        const n = Buffer.byteLength(outputLine(l)) + 1;
        if (inOutputFile(l)) ok += n;
        else bad += n;
      }
      if (page.length < PAGE) break;
      from = page[page.length - 1]!.line_no + 1;
    }
    const file = (role: 'output' | 'error', bytes: number): BatchFilesTable => ({ id: newFileId(now), key_id: b.key_id, purpose: 'batch_output', filename: `${b.id}_${role}.jsonl`, bytes, created_at: now, expires_at: now + retentionDays * DAY_MS, batch_id: b.id, role });
    if (ok > 0) files.push(file('output', ok));
    if (bad > 0) files.push(file('error', bad));
  }
  const time = to === 'completed' ? 'completed_at' : to === 'cancelled' ? 'cancelled_at' : 'expired_at';
  return db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable('batches')
      .set({ status: to, [time]: now, finalizing_at: b.finalizing_at ?? (to === 'completed' ? now : null), output_file_id: files.find((f) => f.role === 'output')?.id ?? null, error_file_id: files.find((f) => f.role === 'error')?.id ?? null })
      .where('id', '=', b.id)
      .where('status', 'in', ['in_progress', 'finalizing', 'cancelling'])
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    if (files.length > 0) await trx.insertInto('batch_files').values(files).execute();
    return true;
  });
}
