import type { IncomingMessage } from 'node:http';
import { newRequestId } from '../util/ids.js';

/** Longest client-sent `x-request-id` kept, in characters. */
export const MAX_CLIENT_REQUEST_ID = 128;

/** Characters a kept request id may hold: safe in headers, logs, URLs and the database. */
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:@+=/-]+$/;

/**
 * The id of a request: the client's `x-request-id` when it is 1–128 safe characters
 * (letters, digits, `. _ : @ + = / -`), so a client can correlate its own logs with ours;
 * otherwise a new `req_…` id. Any other value is ignored, never echoed.
 */
export function requestIdOf(req: IncomingMessage): string {
  const sent = req.headers['x-request-id'];
  if (typeof sent === 'string' && sent.length <= MAX_CLIENT_REQUEST_ID && SAFE_REQUEST_ID.test(sent)) return sent;
  return newRequestId();
}
