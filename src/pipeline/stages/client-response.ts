import type { GatewayError } from '../../errors/gateway-error.js';
import type { IngressAdapter, ResponseIdentity, StreamEncoder } from '../../ingress/types.js';
import type { ClientSink } from '../state/client-sink.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { ResponseState } from '../state/response-state.js';

/**
 * The client response stage: headers, keep-alive comments, complete bodies and error responses,
 * written through the {@link ClientSink}, in the request's client API (its ingress adapter).
 */

const KEEP_ALIVE = ': keep-alive\n\n';

/** Headers of every answer of a generation: rate-limit state, request and generation ids. */
export function responseHeaders(draft: GenerationDraft): Record<string, string> {
  return { ...draft.extraHeaders, 'x-request-id': draft.requestId, 'x-op-generation-id': draft.id, 'x-generation-id': draft.id };
}

/**
 * Headers of an error response: `x-request-id`, `Retry-After` for errors that carry one, and
 * `x-should-retry: false` on terminal errors (OpenAI and Anthropic SDKs retry every 5xx unless
 * told otherwise, and a terminal error will fail again).
 */
export function errorHeaders(err: GatewayError, requestId: string): Record<string, string> {
  const headers: Record<string, string> = { 'x-request-id': requestId };
  if (err.retryAfterSeconds !== undefined) headers['retry-after'] = String(err.retryAfterSeconds);
  if (err.kind === 'terminal') headers['x-should-retry'] = 'false';
  return headers;
}

/** The identity a response and its events carry. */
export function identityFor(draft: GenerationDraft, model: string): ResponseIdentity {
  return { id: draft.id, created: Math.floor(draft.createdAt / 1000), model };
}

/** Send the 200 and SSE headers once. */
export function sendStreamHeaders(sink: ClientSink, state: ResponseState, draft: GenerationDraft): void {
  if (state.headersSent) return;
  state.headersSent = true;
  sink.writeHead(200, {
    'content-type': state.streamContentType ?? 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    ...responseHeaders(draft),
  });
}

/**
 * While a stream waits for its first content, send a keep-alive comment (or the API's own
 * `text`, e.g. Anthropic's `ping` event) every `intervalMs`
 * (committing the 200). Stops by itself once output starts or the client leaves.
 */
export function startKeepAlive(sink: ClientSink, state: ResponseState, draft: GenerationDraft, intervalMs: number, text: string = KEEP_ALIVE): void {
  state.keepAlive = setInterval(() => {
    if (state.outputStarted || state.clientGone.aborted) return stopKeepAlive(state);
    sendStreamHeaders(sink, state, draft);
    void sink.write(text);
  }, intervalMs);
}

export function stopKeepAlive(state: ResponseState): void {
  if (state.keepAlive) clearInterval(state.keepAlive);
  state.keepAlive = undefined;
}

/** An open stream a failure ends: its encoder, text to write before the error event (an open content block's end), and the usage and cost so far. */
export interface OpenStream {
  readonly encoder: StreamEncoder;
  readonly before: string;
  readonly usage: Parameters<StreamEncoder['error']>[2];
  readonly costUsd: number | undefined;
}

/**
 * The one failure reply path (as Fastify's `handleError`): mark the draft failed with `err`
 * ({@link GenerationDraft.fail}) and write what the client can still receive, in its client API:
 * - headers not sent: the API's error envelope, with the error's status and {@link errorHeaders}
 *   (`Retry-After`, `x-should-retry`) plus the generation ids (`draft.httpStatus` = the status);
 * - a stream `open` (an attempt's output started): `before`, then the API's error event with the
 *   usage so far, and the stream's end;
 * - headers sent by keep-alive comments, no output yet: the API's error event (no usage);
 * - output started by an attempt that ended it already: nothing.
 * `model` and `request` name the identity of an error event's stream when none is `open`.
 */
export async function replyFailure(
  sink: ClientSink, state: ResponseState, ingress: IngressAdapter, draft: GenerationDraft, err: GatewayError, model: string, request: unknown, open?: OpenStream,
): Promise<void> {
  draft.fail(err);
  if (open) {
    await sink.write(open.before + open.encoder.error(err, draft.requestId, open.usage, open.costUsd));
    sink.end(open.encoder.done());
    return;
  }
  if (!state.headersSent) return sendErrorEnvelope(sink, ingress, draft, err);
  // Only streams commit headers early, and only generation APIs stream.
  if (state.outputStarted || ingress.output !== 'generation') return;
  const encoder = ingress.createStreamEncoder(identityFor(draft, model), request);
  await sink.write(encoder.error(err, draft.requestId, null, undefined));
  sink.end(encoder.done());
}

/**
 * Refuse a request with no output started and no headers sent: {@link GenerationDraft.fail},
 * then the API's error envelope with the error's status and headers, synchronously.
 */
export function refuseWith(sink: ClientSink, ingress: IngressAdapter, draft: GenerationDraft, err: GatewayError): void {
  draft.fail(err);
  sendErrorEnvelope(sink, ingress, draft, err);
}

/**
 * Refuse a request that keeps no record (so no generation ids): the API's error envelope with
 * the error's status and {@link errorHeaders}. (Errors before the pipeline, auth and routing,
 * are sent by server/send-error.ts with the same status, headers and envelope.)
 */
export function refuseUnrecorded(sink: ClientSink, ingress: IngressAdapter, err: GatewayError, requestId: string): void {
  sink.send(err.status, errorHeaders(err, requestId), ingress.errorBody(err, requestId));
}

/** The API's error envelope with the error's status, {@link errorHeaders} and the generation ids; sets `draft.httpStatus`. */
function sendErrorEnvelope(sink: ClientSink, ingress: IngressAdapter, draft: GenerationDraft, err: GatewayError): void {
  draft.httpStatus = err.status;
  sink.send(err.status, { ...draft.extraHeaders, 'x-op-generation-id': draft.id, 'x-generation-id': draft.id, ...errorHeaders(err, draft.requestId) }, ingress.errorBody(err, draft.requestId));
}
