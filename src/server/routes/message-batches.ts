import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { GatewayError } from '../../errors/gateway-error.js';
import { messageBatchObject, parseMessageBatch, resultLine } from '../../ingress/anthropic/batches/message-batch-shapes.js';
import { COMPLETION_WINDOW, COMPLETION_WINDOW_MS } from '../../ingress/openai/batches/openai-batch-shapes.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { dropBatchContent, finishedLines, getBatch, insertBatch, lineCounts, listBatches, moveBatch } from '../../store/batch-store.js';
import type { BatchesTable, BatchLinesTable, Database } from '../../store/schema.js';
import { randomId } from '../../util/ids.js';
import { badRequest } from './admin-input.js';
import { newBatchId, owner, retentionOf } from './batches.js';

/**
 * Anthropic's Message Batches API, run by the gateway on the same queue and workers as OpenAI
 * batches (docs/batches.md); errors in Anthropic's envelope (the messages adapter's
 * `pathPrefixes`). `results_url` points at this gateway, as the SDK fetches it with the key.
 * @see https://docs.anthropic.com/en/api/creating-message-batches
 */

const PAGE = 1_000;
const ENDED = new Set(['completed', 'failed', 'expired', 'cancelled']);

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  after_id: z.string().max(200).optional(),
  before_id: z.string().max(200).optional(),
});

/**
 * The origin the client reached this gateway at (for `results_url`): the request's `Host`.
 * `X-Forwarded-Host` is not trusted (the gateway has no trusted-proxy setting): a proxy in front
 * passes the original `Host` on (nginx: `proxy_set_header Host $host`).
 */
function originOf(req: FastifyRequest): string {
  return `${req.protocol}://${req.headers.host ?? 'localhost'}`;
}

/** Register `/v1/messages/batches`. */
export function registerMessageBatchRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>): void {
  const notFound = (id: string) => new GatewayError('not_found', `no message batch ${id}`, { param: 'id' });
  const object = async (req: FastifyRequest, b: BatchesTable) => messageBatchObject(b, await lineCounts(db, b.id), originOf(req));

  app.post('/v1/messages/batches', { config: { access: 'key', ownsPath: true } }, async (req) => {
    const parsed = parseMessageBatch(req.body);
    if ('error' in parsed) throw new GatewayError('invalid_request', parsed.error.message, { param: parsed.error.param });
    const now = Date.now();
    const keyId = req.apiKey.isAdmin ? null : req.apiKey.id;
    const batch: BatchesTable = {
      id: newBatchId('msgbatch_', now), key_id: keyId, api: 'anthropic', endpoint: '/v1/messages', input_file_id: null, status: 'validating', completion_window: COMPLETION_WINDOW, metadata: null, errors: null,
      total: parsed.requests.length, retention: String(retentionOf(rt(), req.apiKey)), created_at: now, expires_at: now + COMPLETION_WINDOW_MS, in_progress_at: null, finalizing_at: null, completed_at: null,
      failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null, results_read_at: null, output_file_id: null, error_file_id: null,
    };
    const lines: BatchLinesTable[] = parsed.requests.map((r, i) => ({
      batch_id: batch.id, line_no: i, custom_id: r.customId, line_id: `batch_req_${randomId(24)}`, key_id: keyId, model: String(r.body.model).slice(0, 200), body: JSON.stringify(r.body),
      state: 'queued', lease_owner: null, lease_until: 0, not_before: 0, tries: 0, status_code: null, result: null, generation_id: null, request_id: null, finished_at: null,
    }));
    await insertBatch(db, batch, lines);
    return object(req, batch);
  });

  app.get('/v1/messages/batches', { config: { access: 'key', ownsPath: true } }, async (req) => {
    const q = listQuery.safeParse(req.query);
    if (!q.success) throw badRequest(q.error.issues);
    const limit = q.data.limit ?? 20;
    const rows = await listBatches(db, owner(req.apiKey), 'anthropic', { after: q.data.after_id, before: q.data.before_id, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const data = await Promise.all(page.map((b) => object(req, b)));
    return { data, has_more: rows.length > limit, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null };
  });

  app.get<{ Params: { id: string } }>('/v1/messages/batches/:id', { config: { access: 'key', ownsPath: false } }, async (req) => {
    const b = await getBatch(db, req.params.id, owner(req.apiKey), 'anthropic');
    if (!b) throw notFound(req.params.id);
    return object(req, b);
  });

  app.post<{ Params: { id: string } }>('/v1/messages/batches/:id/cancel', { config: { access: 'key', ownsPath: false } }, async (req) => {
    const b = await getBatch(db, req.params.id, owner(req.apiKey), 'anthropic');
    if (!b) throw notFound(req.params.id);
    await moveBatch(db, b.id, ['validating', 'in_progress'], { status: 'cancelling', cancelling_at: Date.now() });
    return object(req, (await getBatch(db, b.id, undefined)) ?? b);
  });

  app.get<{ Params: { id: string } }>('/v1/messages/batches/:id/results', { config: { access: 'key', ownsPath: false } }, async (req, reply) => {
    const b = await getBatch(db, req.params.id, owner(req.apiKey), 'anthropic');
    if (!b) throw notFound(req.params.id);
    if (!ENDED.has(b.status)) throw new GatewayError('invalid_request', `message batch ${b.id} has not ended yet; its results are available once processing_status is ended`, { param: 'id' });
    if (b.retention === 'none' && b.results_read_at !== null) throw new GatewayError('not_found', `the results of message batch ${b.id} were deleted once read (retention none)`, { param: 'id' });
    let text = '';
    for (let from = 0; ; ) {
      const page = await finishedLines(db, b.id, from, PAGE);
      for (const l of page) text += `${resultLine(l)}\n`;
      if (page.length < PAGE) break;
      from = page[page.length - 1]!.line_no + 1;
    }
    // Retention none: inputs and results go once read (docs/batches.md).
    if (b.retention === 'none') await dropBatchContent(db, b);
    return reply.type('application/binary').send(text);
  });
}
