import type { GenerationIngress } from '../../ingress/types.js';
import type { Attempt } from '../attempt/attempt.js';
import { writeToCache } from './response-cache.js';

/**
 * Keep a finished response for APIs that store responses (Responses' `store`): what the adapter
 * keeps of it, in the database, under the request's retention. Awaited before the client sees
 * the end of the response, so a follow-up (`previous_response_id`, `GET /v1/responses/{id}`)
 * sent as soon as it arrives finds it. While the database cannot be written the response waits
 * in memory and is retried until written (StoredResponseStore); a write refused for good (or
 * beyond the memory bound) is logged and noted in the record's warnings; the answer still goes
 * out. Live answers and cache hits alike go through it. With the response cache the stored
 * response names its entry (`cache_key`), written to the cache before the response is stored.
 */
export async function keepResponse(a: Pick<Attempt, 'rt' | 'draft' | 'input'>, ingress: GenerationIngress, response: unknown): Promise<void> {
  const { rt, draft, input } = a;
  if (!ingress.keep || draft.retention === 'none') return;
  const kept = ingress.keep(input.request, response);
  if (!kept) return;
  // The response names its cache entry (the one it made, or the one a hit came from), so that
  // deleting it deletes the entry; a new entry is written first, so that it exists by then.
  const plan = draft.cachePlan;
  if (plan && !draft.cacheHit) await writeToCache(rt, draft, plan);
  try {
    await rt.responses.save(draft.id, draft.keyId, draft.createdAt, draft.retention, plan ? { ...kept, cache_key: plan.key } : kept);
  } catch (err) {
    rt.log.error({ err, reqId: draft.requestId, generation: draft.id }, 'storing the response failed');
    draft.warnings.push('the response could not be stored; it cannot be retrieved or continued with previous_response_id');
  }
}
