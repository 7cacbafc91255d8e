import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { GatewayError } from '../../errors/gateway-error.js';
import {
  BATCH_ENDPOINTS, COMPLETION_WINDOW, COMPLETION_WINDOW_MS, batchObject, fileObject, inOutputFile, outputLine, parseInputFile,
} from '../../ingress/openai/batches/openai-batch-shapes.js';
import { newFileId } from '../../pipeline/batches/batch-finalize.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import {
  deleteFile, dropReadResults, fileText, finishedLines, getBatch, getFile, insertBatch, insertFile, lineCounts, listBatches, listFiles, moveBatch, type Owner,
} from '../../store/batch-store.js';
import type { ApiKey } from '../../store/keys.js';
import type { BatchesTable, BatchLinesTable, Database } from '../../store/schema.js';
import { randomId, timePrefix } from '../../util/ids.js';
import { badRequest, parseBody } from './admin-input.js';

/**
 * The OpenAI Files API (purpose `batch`) and Batch API, run by the gateway (docs/batches.md):
 * files in the database under the uploading key, batches whose lines the workers of every
 * gateway process run (pipeline/batches/). A key sees its own files and batches only; the admin
 * key sees all.
 * @see https://platform.openai.com/docs/api-reference/files
 * @see https://platform.openai.com/docs/api-reference/batch
 */

const DAY_MS = 86_400_000;
/** Multipart overhead allowed beyond `batches.max_file_bytes`. */
const FORM_SLACK_BYTES = 64 * 1024;
/** Lines read per page when a result file is sent. */
const PAGE = 1_000;

export const owner = (key: ApiKey): Owner => (key.isAdmin ? undefined : key.id);
const keyIdOf = (key: ApiKey): string | null => (key.isAdmin ? null : key.id);
export const newBatchId = (prefix: string, now = Date.now()): string => `${prefix}${timePrefix(now)}${randomId(16)}`;

/** The retention a key's batch files follow: its own, else its team's, else the gateway's. */
export function retentionOf(rt: GatewayRuntime, key: ApiKey): 'none' | number {
  return key.settings.retention ?? key.team?.settings.retention ?? rt.config.retention;
}

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(10_000).optional(),
  after: z.string().max(200).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  purpose: z.string().max(64).optional(),
});

const createBatch = z
  .object({
    input_file_id: z.string().min(1).max(200),
    endpoint: z.enum(BATCH_ENDPOINTS),
    completion_window: z.literal(COMPLETION_WINDOW),
    metadata: z.record(z.string().max(64), z.string().max(512)).refine((m) => Object.keys(m).length <= 16, 'at most 16 pairs').nullable().optional(),
    output_expires_after: z.object({ anchor: z.literal('created_at'), seconds: z.number().int().min(3600).max(2_592_000) }).strict().optional(),
  })
  .strict();

/** Read a multipart upload: its fields and its one `file` part. */
async function readForm(req: FastifyRequest): Promise<{ purpose: unknown; file: unknown; anchor: unknown; seconds: unknown }> {
  let form: FormData;
  try {
    form = await new Response(req.body as Buffer, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
  } catch {
    throw new GatewayError('invalid_request', 'the body is not a valid multipart/form-data upload', { param: 'file' });
  }
  return { purpose: form.get('purpose'), file: form.get('file'), anchor: form.get('expires_after[anchor]'), seconds: form.get('expires_after[seconds]') };
}

/** The content of a file: an upload's text, or a batch's output or error file made from its lines. */
async function* fileContent(db: Kysely<Database>, fileId: string, batchId: string | null, role: string | null): AsyncGenerator<string> {
  if (batchId === null) {
    yield await fileText(db, fileId);
    return;
  }
  const wanted = (l: BatchLinesTable) => (role === 'output' ? inOutputFile(l) : !inOutputFile(l));
  for (let from = 0; ; ) {
    const page = await finishedLines(db, batchId, from, PAGE);
    const text = page.filter(wanted).map((l) => `${outputLine(l)}\n`).join('');
    if (text) yield text;
    if (page.length < PAGE) return;
    from = page[page.length - 1]!.line_no + 1;
  }
}

/** The `batch` object of a row, with its lines' counts. */
async function batchBody(db: Kysely<Database>, b: BatchesTable): Promise<Record<string, unknown>> {
  return batchObject(b, await lineCounts(db, b.id));
}

/** Register `/v1/files` and `/v1/batches`. */
export function registerBatchRoutes(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>): void {
  const cfg = () => rt().config.batches;
  const notFound = (what: string, id: string) => new GatewayError('not_found', `no ${what} ${id}`, { param: 'id' });

  // Uploads are multipart: read for POST /v1/files only, bounded by the file bound (not server.body_limit_bytes).
  app.addContentTypeParser('multipart/form-data', (req, payload, done) => {
    if (req.method !== 'POST' || req.url.split('?', 1)[0] !== '/v1/files') return done(new GatewayError('unsupported_media_type', 'send the body as Content-Type: application/json'), undefined);
    const limit = cfg().max_file_bytes + FORM_SLACK_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    payload.on('error', (err) => done(err, undefined));
    payload.on('end', () => {
      if (size > limit) return done(new GatewayError('body_too_large', `the upload is larger than batches.max_file_bytes (${cfg().max_file_bytes} bytes)`, { param: 'file' }), undefined);
      done(null, Buffer.concat(chunks));
    });
  });
  app.post('/v1/files', { config: { access: 'key', ownsPath: true } }, async (req, reply) => {
    const form = await readForm(req);
    if (form.purpose !== 'batch') throw new GatewayError('invalid_request', `purpose: the gateway keeps files for batches only; send purpose "batch" (got ${JSON.stringify(typeof form.purpose === 'string' ? form.purpose.slice(0, 40) : null)})`, { param: 'purpose' });
    if (!(form.file instanceof Blob)) throw new GatewayError('invalid_request', 'file: a file part is required', { param: 'file' });
    const max = cfg().max_file_bytes;
    if (form.file.size > max) throw new GatewayError('body_too_large', `file: ${form.file.size} bytes; a batch input file may have at most ${max} bytes (batches.max_file_bytes)`, { param: 'file' });
    const filename = (form.file as File).name || 'upload.jsonl';
    if (!filename.endsWith('.jsonl')) throw new GatewayError('invalid_request', 'file: a batch input file must be a .jsonl file', { param: 'file' });
    let ttlMs = cfg().file_retention_days * DAY_MS;
    if (form.anchor !== null || form.seconds !== null) {
      const seconds = Number(form.seconds);
      if (form.anchor !== 'created_at') throw new GatewayError('invalid_request', 'expires_after[anchor]: must be "created_at"', { param: 'expires_after[anchor]' });
      if (!Number.isInteger(seconds) || seconds < 3600 || seconds > 2_592_000) throw new GatewayError('invalid_request', 'expires_after[seconds]: an integer from 3600 to 2592000', { param: 'expires_after[seconds]' });
      ttlMs = seconds * 1000;
    }
    const now = Date.now();
    const text = await form.file.text();
    const file = { id: newFileId(now), key_id: keyIdOf(req.apiKey), purpose: 'batch', filename: filename.slice(0, 255), bytes: form.file.size, created_at: now, expires_at: now + ttlMs, batch_id: null, role: null };
    await insertFile(db, file, text);
    return reply.code(200).send(fileObject(file));
  });

  app.get('/v1/files', { config: { access: 'key', ownsPath: true } }, async (req) => {
    const q = listQuery.safeParse(req.query);
    if (!q.success) throw badRequest(q.error.issues);
    const limit = q.data.limit ?? 10_000;
    const rows = await listFiles(db, owner(req.apiKey), { purpose: q.data.purpose, after: q.data.after, limit: limit + 1, order: q.data.order ?? 'desc' });
    const data = rows.slice(0, limit).map(fileObject);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id', { config: { access: 'key', ownsPath: false } }, async (req) => {
    const f = await getFile(db, req.params.id, owner(req.apiKey));
    if (!f) throw notFound('file', req.params.id);
    return fileObject(f);
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id/content', { config: { access: 'key', ownsPath: false } }, async (req, reply) => {
    const f = await getFile(db, req.params.id, owner(req.apiKey));
    if (!f) throw notFound('file', req.params.id);
    let text = '';
    for await (const part of fileContent(db, f.id, f.batch_id, f.role)) text += part;
    // Retention none: a batch's results go once read (docs/batches.md).
    if (f.batch_id !== null) {
      const b = await getBatch(db, f.batch_id, undefined);
      if (b && b.retention === 'none') await dropReadResults(db, b, f.role === 'output' ? 'output' : 'error');
    }
    return reply.type('application/jsonl').send(text);
  });

  app.delete<{ Params: { id: string } }>('/v1/files/:id', { config: { access: 'key', ownsPath: false } }, async (req) => {
    if (!(await deleteFile(db, req.params.id, owner(req.apiKey)))) throw notFound('file', req.params.id);
    return { id: req.params.id, object: 'file', deleted: true };
  });

  app.post('/v1/batches', { config: { access: 'key', ownsPath: true } }, async (req, reply) => {
    const body = parseBody(createBatch, req.body);
    const file = await getFile(db, body.input_file_id, owner(req.apiKey));
    if (!file || file.purpose !== 'batch') throw new GatewayError('not_found', `input_file_id: no file ${body.input_file_id} with purpose batch`, { param: 'input_file_id' });
    const now = Date.now();
    const parsed = parseInputFile(await fileText(db, file.id), body.endpoint);
    const batch: BatchesTable = {
      id: newBatchId('batch_', now), key_id: keyIdOf(req.apiKey), api: 'openai', endpoint: body.endpoint, input_file_id: file.id, status: parsed.errors.length > 0 ? 'failed' : 'validating',
      completion_window: COMPLETION_WINDOW, metadata: body.metadata ? JSON.stringify(body.metadata) : null, errors: parsed.errors.length > 0 ? JSON.stringify({ object: 'list', data: parsed.errors }) : null,
      total: parsed.lines.length, retention: String(retentionOf(rt(), req.apiKey)), created_at: now, expires_at: now + COMPLETION_WINDOW_MS, in_progress_at: null, finalizing_at: null, completed_at: null,
      failed_at: parsed.errors.length > 0 ? now : null, expired_at: null, cancelling_at: null, cancelled_at: null, results_read_at: null, output_file_id: null, error_file_id: null,
    };
    const lines: BatchLinesTable[] = parsed.lines.map((l, i) => ({
      batch_id: batch.id, line_no: i, custom_id: l.customId, line_id: `batch_req_${randomId(24)}`, key_id: batch.key_id, model: String(l.body.model).slice(0, 200), body: JSON.stringify(l.body),
      state: 'queued', lease_owner: null, lease_until: 0, not_before: 0, tries: 0, status_code: null, result: null, generation_id: null, request_id: null, finished_at: null,
    }));
    await insertBatch(db, batch, lines);
    return reply.code(200).send(await batchBody(db, batch));
  });

  app.get('/v1/batches', { config: { access: 'key', ownsPath: true } }, async (req) => {
    const q = listQuery.safeParse(req.query);
    if (!q.success) throw badRequest(q.error.issues);
    const limit = Math.min(q.data.limit ?? 20, 100);
    const rows = await listBatches(db, owner(req.apiKey), 'openai', { after: q.data.after, limit: limit + 1 });
    const data = await Promise.all(rows.slice(0, limit).map(async (b) => batchObject(b, await lineCounts(db, b.id))));
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > limit };
  });

  app.get<{ Params: { id: string } }>('/v1/batches/:id', { config: { access: 'key', ownsPath: false } }, async (req) => {
    const b = await getBatch(db, req.params.id, owner(req.apiKey), 'openai');
    if (!b) throw notFound('batch', req.params.id);
    return batchBody(db, b);
  });

  app.post<{ Params: { id: string } }>('/v1/batches/:id/cancel', { config: { access: 'key', ownsPath: false } }, async (req) => {
    const b = await getBatch(db, req.params.id, owner(req.apiKey), 'openai');
    if (!b) throw notFound('batch', req.params.id);
    const now = Date.now();
    if (await moveBatch(db, b.id, ['validating', 'in_progress'], { status: 'cancelling', cancelling_at: now })) {
      b.status = 'cancelling';
      b.cancelling_at = now;
    } else if (b.status !== 'cancelling' && b.status !== 'cancelled') {
      throw new GatewayError('invalid_request', `batch ${b.id} is ${b.status} and cannot be cancelled`, { param: 'id', status: 409 });
    }
    return batchBody(db, (await getBatch(db, b.id, undefined)) ?? b);
  });
}
