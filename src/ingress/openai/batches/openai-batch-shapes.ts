import type { BatchesTable, BatchFilesTable, BatchLinesTable } from '../../../store/schema.js';
import type { LineCounts } from '../../../store/batch-store.js';

/**
 * The OpenAI Files and Batch API objects and JSONL lines, from the gateway's rows (pure).
 * @see https://platform.openai.com/docs/api-reference/batch
 * @see https://platform.openai.com/docs/api-reference/files
 */

/** The endpoints a batch may run (the gateway's client APIs OpenAI's Batch API accepts). */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses'] as const;

/** Most lines of one OpenAI batch (OpenAI's bound). */
export const MAX_OPENAI_BATCH_LINES = 50_000;

/** The one completion window OpenAI accepts. */
export const COMPLETION_WINDOW = '24h';
export const COMPLETION_WINDOW_MS = 24 * 3_600_000;

const seconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(Number(ms) / 1000));

/** An `OpenAIFile`: `{id, object: "file", bytes, created_at, expires_at, filename, purpose, status}` (times in unix seconds). */
export function fileObject(f: BatchFilesTable): Record<string, unknown> {
  return { id: f.id, object: 'file', bytes: Number(f.bytes), created_at: seconds(f.created_at), expires_at: seconds(f.expires_at), filename: f.filename, purpose: f.purpose, status: 'processed', status_details: null };
}

/**
 * A `Batch` object: status, the unix-second times of each step reached, `request_counts`
 * (`total`, `completed`: answered 200, `failed`: every other answer or a line that did not run),
 * output and error file ids, `errors` of a batch whose input was refused.
 */
export function batchObject(b: BatchesTable, counts: LineCounts): Record<string, unknown> {
  return {
    id: b.id,
    object: 'batch',
    endpoint: b.endpoint,
    errors: b.errors === null ? null : (JSON.parse(b.errors) as unknown),
    input_file_id: b.input_file_id,
    completion_window: b.completion_window,
    status: b.status,
    output_file_id: b.output_file_id,
    error_file_id: b.error_file_id,
    created_at: seconds(b.created_at),
    in_progress_at: seconds(b.in_progress_at),
    expires_at: seconds(b.expires_at),
    finalizing_at: seconds(b.finalizing_at),
    completed_at: seconds(b.completed_at),
    failed_at: seconds(b.failed_at),
    expired_at: seconds(b.expired_at),
    cancelling_at: seconds(b.cancelling_at),
    cancelled_at: seconds(b.cancelled_at),
    request_counts: { total: b.total, completed: counts.succeeded, failed: counts.failed + counts.canceled + counts.expired },
    metadata: b.metadata === null ? null : (JSON.parse(b.metadata) as unknown),
  };
}

/**
 * One line of a batch's output or error file (`BatchRequestOutput`): `{id, custom_id, response:
 * {status_code, request_id, body}, error}`; a line that never ran has `response: null` and
 * `error: {code: "batch_cancelled" | "batch_expired", message}`.
 */
export function outputLine(l: BatchLinesTable): string {
  if (l.state === 'canceled' || l.state === 'expired') {
    const code = l.state === 'canceled' ? 'batch_cancelled' : 'batch_expired';
    return JSON.stringify({ id: l.line_id, custom_id: l.custom_id, response: null, error: { code, message: l.state === 'canceled' ? 'the batch was cancelled before this request ran' : 'the batch expired before this request ran' } });
  }
  return JSON.stringify({ id: l.line_id, custom_id: l.custom_id, response: { status_code: l.status_code, request_id: l.request_id, body: l.result === null ? null : (JSON.parse(l.result) as unknown) }, error: null });
}

/** Whether a finished line belongs in the output file (answered 200) rather than the error file. */
export const inOutputFile = (l: BatchLinesTable): boolean => l.state === 'done' && l.status_code === 200;

/** One refused line of an input file, as `errors.data[]` of a failed batch. */
export interface LineError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

/** A valid input line: its `custom_id`, `url` and `body` (an object, never streamed). */
export interface InputLine {
  customId: string;
  body: Record<string, unknown>;
}

/** Most line errors a failed batch lists. */
const MAX_LINE_ERRORS = 100;

/**
 * Read a batch input file (JSONL): each non-empty line an object `{custom_id, method: "POST",
 * url: <endpoint>, body: {…}}`, `custom_id` a unique non-empty string, `url` the batch's
 * `endpoint`, `body` an object without `stream: true`; at most {@link MAX_OPENAI_BATCH_LINES}
 * lines. Line numbers in errors are 1-based.
 * @returns the lines, or the errors (at most 100) when any line is refused.
 */
export function parseInputFile(text: string, endpoint: string): { lines: InputLine[]; errors: LineError[] } {
  const lines: InputLine[] = [];
  const errors: LineError[] = [];
  const seen = new Set<string>();
  const add = (code: string, message: string, line: number | null, param: string | null = null) => {
    if (errors.length < MAX_LINE_ERRORS) errors.push({ code, message, param, line });
  };
  const raw = text.split('\n');
  for (let i = 0; i < raw.length; i++) {
    const src = raw[i]!.trim();
    if (src === '') continue;
    const n = i + 1;
    let v: unknown;
    try {
      v = JSON.parse(src);
    } catch {
      add('invalid_json_line', `line ${n} is not valid JSON`, n);
      continue;
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) {
      add('invalid_request', `line ${n} is not a JSON object`, n);
      continue;
    }
    const o = v as Record<string, unknown>;
    if (typeof o.custom_id !== 'string' || o.custom_id === '') add('missing_required_parameter', `line ${n}: custom_id must be a non-empty string`, n, 'custom_id');
    else if (seen.has(o.custom_id)) add('duplicate_custom_id', `line ${n}: custom_id ${JSON.stringify(o.custom_id.slice(0, 64))} is used by an earlier line; each custom_id must be unique`, n, 'custom_id');
    else seen.add(o.custom_id);
    if (o.method !== 'POST') add('invalid_method', `line ${n}: method must be "POST"`, n, 'method');
    if (typeof o.url !== 'string' || !(BATCH_ENDPOINTS as readonly string[]).includes(o.url)) add('invalid_url', `line ${n}: url must be one of ${BATCH_ENDPOINTS.join(', ')}`, n, 'url');
    else if (o.url !== endpoint) add('mismatched_url', `line ${n}: url ${o.url} differs from the batch's endpoint ${endpoint}`, n, 'url');
    if (!o.body || typeof o.body !== 'object' || Array.isArray(o.body)) add('invalid_request', `line ${n}: body must be a JSON object`, n, 'body');
    else if ((o.body as Record<string, unknown>).stream === true) add('invalid_request', `line ${n}: body.stream must not be true in a batch`, n, 'body.stream');
    else if (typeof (o.body as Record<string, unknown>).model !== 'string') add('missing_required_parameter', `line ${n}: body.model must be a string`, n, 'body.model');
    if (errors.length === 0) lines.push({ customId: o.custom_id as string, body: o.body as Record<string, unknown> });
  }
  if (errors.length === 0 && lines.length === 0) add('empty_file', 'the input file has no lines', null);
  if (lines.length > MAX_OPENAI_BATCH_LINES) add('too_many_requests', `the input file has ${lines.length} lines; a batch takes at most ${MAX_OPENAI_BATCH_LINES}`, null);
  return errors.length > 0 ? { lines: [], errors } : { lines, errors };
}
