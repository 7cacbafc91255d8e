import type { BatchesTable, BatchLinesTable } from '../../../store/schema.js';
import type { LineCounts } from '../../../store/batch-store.js';

/**
 * The Anthropic Message Batches objects and result lines, from the gateway's rows (pure).
 * @see https://docs.anthropic.com/en/api/creating-message-batches
 */

/** Most requests of one Message Batch (Anthropic's bound). */
export const MAX_MESSAGE_BATCH_REQUESTS = 100_000;

const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(Number(ms)).toISOString());

/** Anthropic's `processing_status` of a batch in OpenAI's status terms. */
function processingStatus(status: string): 'in_progress' | 'canceling' | 'ended' {
  if (status === 'cancelling') return 'canceling';
  return status === 'validating' || status === 'in_progress' || status === 'finalizing' ? 'in_progress' : 'ended';
}

/**
 * A `MessageBatch`: RFC 3339 times, `request_counts` whose finished counts stay 0 until the
 * batch has ended (as Anthropic's do), and `results_url` on this gateway (`origin`: the SDK
 * fetches it as an absolute URL with the client's key) once ended.
 */
export function messageBatchObject(b: BatchesTable, counts: LineCounts, origin: string): Record<string, unknown> {
  const status = processingStatus(b.status);
  const ended = status === 'ended';
  const endedAt = b.completed_at ?? b.cancelled_at ?? b.expired_at ?? b.failed_at;
  return {
    id: b.id,
    type: 'message_batch',
    processing_status: status,
    request_counts: ended
      ? { processing: 0, succeeded: counts.succeeded, errored: counts.failed, canceled: counts.canceled, expired: counts.expired }
      : { processing: counts.total, succeeded: 0, errored: 0, canceled: 0, expired: 0 },
    ended_at: ended ? iso(endedAt) : null,
    created_at: iso(b.created_at),
    expires_at: iso(b.expires_at),
    archived_at: null,
    cancel_initiated_at: iso(b.cancelling_at),
    results_url: ended ? `${origin}/v1/messages/batches/${b.id}/results` : null,
  };
}

/**
 * One result line: `{custom_id, result}` with `result` `{type: "succeeded", message}`,
 * `{type: "errored", error: <the error response>}`, `{type: "canceled"}` or `{type: "expired"}`.
 */
export function resultLine(l: BatchLinesTable): string {
  if (l.state === 'canceled') return JSON.stringify({ custom_id: l.custom_id, result: { type: 'canceled' } });
  if (l.state === 'expired') return JSON.stringify({ custom_id: l.custom_id, result: { type: 'expired' } });
  const body = l.result === null ? null : (JSON.parse(l.result) as unknown);
  if (l.status_code === 200) return JSON.stringify({ custom_id: l.custom_id, result: { type: 'succeeded', message: body } });
  return JSON.stringify({ custom_id: l.custom_id, result: { type: 'errored', error: body } });
}

/** A valid request of a Message Batch. */
export interface BatchRequest {
  customId: string;
  body: Record<string, unknown>;
}

/** A refused Message Batches body: the message and the field (`requests.3.custom_id`). */
export interface BatchRequestError {
  message: string;
  param: string;
}

/**
 * Read `{requests: [{custom_id, params}]}`: 1 to {@link MAX_MESSAGE_BATCH_REQUESTS} requests,
 * each `custom_id` unique and matching `^[a-zA-Z0-9_-]{1,64}$`, `params` a Messages body
 * (an object with a string `model`) that does not stream. Anthropic refuses the whole batch for
 * one bad request; so does this.
 */
export function parseMessageBatch(body: unknown): { requests: BatchRequest[] } | { error: BatchRequestError } {
  const list = body && typeof body === 'object' ? (body as Record<string, unknown>).requests : undefined;
  if (!Array.isArray(list)) return { error: { message: 'requests: an array of {custom_id, params} is required', param: 'requests' } };
  if (list.length === 0 || list.length > MAX_MESSAGE_BATCH_REQUESTS) return { error: { message: `requests: between 1 and ${MAX_MESSAGE_BATCH_REQUESTS} requests`, param: 'requests' } };
  const seen = new Set<string>();
  const requests: BatchRequest[] = [];
  for (let i = 0; i < list.length; i++) {
    const r = list[i] as Record<string, unknown> | null;
    if (!r || typeof r !== 'object') return { error: { message: `requests.${i}: an object {custom_id, params} is required`, param: `requests.${i}` } };
    if (typeof r.custom_id !== 'string' || !CUSTOM_ID.test(r.custom_id)) return { error: { message: `requests.${i}.custom_id: 1 to 64 characters of a-z, A-Z, 0-9, _ and -`, param: `requests.${i}.custom_id` } };
    if (seen.has(r.custom_id)) return { error: { message: `requests.${i}.custom_id: ${r.custom_id} is used by an earlier request; custom_id values must be unique`, param: `requests.${i}.custom_id` } };
    seen.add(r.custom_id);
    const p = r.params as Record<string, unknown> | null;
    if (!p || typeof p !== 'object' || Array.isArray(p)) return { error: { message: `requests.${i}.params: a Messages request body is required`, param: `requests.${i}.params` } };
    if (typeof p.model !== 'string') return { error: { message: `requests.${i}.params.model: Field required`, param: `requests.${i}.params.model` } };
    if (p.stream === true) return { error: { message: `requests.${i}.params.stream: a batch request cannot stream`, param: `requests.${i}.params.stream` } };
    requests.push({ customId: r.custom_id, body: p });
  }
  return { requests };
}
