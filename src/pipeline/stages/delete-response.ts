import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * `DELETE /v1/responses/{id}`: a stored response's text is removed everywhere the gateway keeps
 * it — the response cache entry it names (the one it was stored in or, for a cache hit, answered
 * from), the text of its generation record (`content`; the record itself stays, for usage and
 * cost), and the stored response. In that order, so that a failure leaves the stored response
 * in place and the client's retry finds it. A later response that continued it
 * (`previous_response_id`) keeps its own copy of the conversation until it is deleted itself.
 */

/** Poll step while the generation record may still be queued on another replica, in ms. */
const RECORD_POLL_MS = 50;

/**
 * Delete the stored response `id` of key `keyId` (null: the admin key) and its text.
 * @returns false when the key has no such response (nothing was deleted).
 * @throws GatewayError `response_cache_unavailable` (503, retryable) when its cache entry cannot
 *   be deleted; nothing else was deleted then.
 */
export async function deleteStoredResponse(rt: GatewayRuntime, id: string, keyId: string | null): Promise<boolean> {
  const stored = await rt.responses.get(id, keyId);
  if (!stored) return false;
  if (stored.cache_key) {
    try {
      await rt.cache.delete(stored.cache_key);
    } catch (err) {
      throw new GatewayError('response_cache_unavailable', 'the response cache cannot be reached, so the cached copy of this response could not be deleted; nothing was deleted, retry shortly', { cause: err, retryAfterSeconds: 1 });
    }
  }
  await forgetRecordText(rt, id, keyId);
  await rt.responses.delete(id, keyId);
  return true;
}

/**
 * Remove the text (`content`) of generation record `id`. A record still queued in this process
 * loses its text before it is written; one being written is updated once written (the writer
 * is flushed). A record found nowhere may be queued on another replica: it is looked for again
 * until `records.flush_interval_ms` has passed twice (records are committed within one
 * interval of their response), then given up on with a warning.
 */
async function forgetRecordText(rt: GatewayRuntime, id: string, keyId: string | null): Promise<void> {
  const pending = rt.writer.pending(id);
  if (pending) {
    pending.content = null;
    await rt.writer.flush();
  }
  const deadline = performance.now() + 2 * rt.config.records.flush_interval_ms;
  for (;;) {
    if (await rt.responses.clearRecordText(id, keyId)) return;
    if (performance.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, RECORD_POLL_MS));
  }
  rt.log.warn({ generation: id }, 'deleted response: its generation record was not found to remove its text (not written yet, or dropped)');
}
