import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { ServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { sendError } from './send-error.js';
import { newRequestId } from '../util/ids.js';

/**
 * Bounds on what one client connection may cost the gateway: how long its request head and
 * body may take, how long its body may go silent, and what happens to the unread rest of a
 * body the gateway refuses. Node's http server enforces the head and whole-request timeouts
 * (answering a bare 408 and closing); this module adds the body idle timeout, the lingering
 * close of a 413 and the connection close of a 401.
 */

/** Most bytes of an over-limit body read and discarded before its 413 is sent. */
export const MAX_DISCARD_BYTES = 64 * 1024 * 1024;

/**
 * Fastify/Node http server options for the client timeouts of `server` (read once at start:
 * changing them needs a restart). Node checks the head and request timeouts every
 * `connectionsCheckingInterval`, here a quarter of the shorter one, between 100 ms and 1 s.
 * @see https://nodejs.org/docs/latest-v20.x/api/http.html#httpcreateserveroptions-requestlistener
 */
export function clientTimeoutOptions(server: Readonly<ServerConfig>): Pick<FastifyServerOptions, 'requestTimeout'> & { http: object } {
  const shortest = Math.min(...[server.headers_timeout_ms, server.request_timeout_ms].filter((ms) => ms > 0), 4000);
  return {
    requestTimeout: server.request_timeout_ms,
    http: {
      headersTimeout: server.headers_timeout_ms,
      requestTimeout: server.request_timeout_ms,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(shortest / 4))),
    },
  };
}

/** Whether a request announces a body that has not been read to its end yet. */
function bodyPending(raw: IncomingMessage): boolean {
  if (raw.complete) return false;
  return raw.headers['transfer-encoding'] !== undefined || Number(raw.headers['content-length'] ?? 0) > 0;
}

/** A complete HTTP response written on the socket itself (the request is still being parsed). */
function rawResponse(status: number, reason: string, err: GatewayError, requestId: string): string {
  const body = JSON.stringify({ error: err.toBody(requestId) });
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP server could not parse or timed out before a
 * request existed (a head slower than `server.headers_timeout_ms`, a request slower than
 * `server.request_timeout_ms`, headers too large, a malformed request) gets the gateway's JSON
 * error envelope, then the connection is closed.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let response: string;
  const id = newRequestId();
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      response = rawResponse(408, 'Request Timeout', new GatewayError('request_timeout', 'the request took longer than server.headers_timeout_ms (head) or server.request_timeout_ms (whole request); the connection is closed'), id);
      break;
    case 'HPE_HEADER_OVERFLOW':
      response = rawResponse(431, 'Request Header Fields Too Large', new GatewayError('invalid_request', 'the request headers are too large', { status: 431 }), id);
      break;
    default:
      response = rawResponse(400, 'Bad Request', new GatewayError('invalid_request', 'malformed HTTP request'), id);
  }
  if (socket.writable) socket.write(response);
  socket.destroy();
}

/**
 * Install the body idle timeout and the connection close of refused requests:
 * - while a request body is read, a socket silent for `server.body_idle_timeout_ms` gets a 408
 *   `request_timeout` and is closed;
 * - a 401 sent before the body was read closes the connection (`connection: close`) instead of
 *   reading the rest of a body nobody will use.
 * Injected requests (`app.inject`) have no socket: the idle timeout does not apply to them.
 */
export function installClientLimits(app: FastifyInstance, server: () => Readonly<ServerConfig>): void {
  // Callback-style hooks: no promise per request on the hot path.
  app.addHook('onRequest', (req, reply, next) => {
    const idleMs = server().body_idle_timeout_ms;
    const raw = req.raw;
    // An injected request (`app.inject`, light-my-request) has its whole body in memory and no
    // socket timeouts (`raw.setTimeout` is missing): nothing can go silent, nothing to watch.
    if (idleMs <= 0 || !bodyPending(raw) || typeof raw.setTimeout !== 'function') return next();
    const socket = raw.socket;
    const onIdle = () => {
      const err = new GatewayError('request_timeout', `the request body went silent for more than ${idleMs} ms (server.body_idle_timeout_ms)`);
      if (raw.complete || socket.destroyed) return;
      if (reply.raw.headersSent) socket.destroy();
      else {
        socket.end(rawResponse(408, 'Request Timeout', err, String(req.id)));
        setTimeout(() => socket.destroy(), 1000).unref();
      }
    };
    // The request's own timeout event: Node's server hands a socket timeout to the request
    // being received before it would destroy the socket.
    raw.setTimeout(idleMs, onIdle);
    const done = () => {
      socket.setTimeout(0);
      raw.off('timeout', onIdle);
    };
    raw.once('end', done);
    raw.once('close', done);
    next();
  });
  app.addHook('onSend', (req, reply, payload, next) => {
    if (reply.statusCode === 401 && bodyPending(req.raw)) reply.header('connection', 'close');
    next(null, payload);
  });
}

/**
 * Answer a body over the limit so the client can read it: read and discard the rest of the
 * body (up to {@link MAX_DISCARD_BYTES}, within the request timeouts), then send the 413. A
 * client still sending when the gateway answers and closes sees a reset, not the answer
 * (that is what HTTP clients built on fetch report as "fetch failed"). When the bound is
 * reached first, the 413 goes out with `connection: close`.
 */
export function sendBodyTooLarge(req: FastifyRequest, reply: FastifyReply, err: GatewayError): void {
  const raw = req.raw;
  if (!bodyPending(raw) || raw.destroyed) {
    sendError(reply, err, String(req.id));
    return;
  }
  let discarded = 0;
  const finish = (drained: boolean) => {
    raw.off('data', onData);
    raw.off('end', onEnd);
    raw.off('close', onClose);
    if (!drained) {
      reply.header('connection', 'close');
      raw.pause();
    }
    sendError(reply, err, String(req.id));
  };
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > MAX_DISCARD_BYTES) finish(false);
  };
  const onEnd = () => finish(true);
  const onClose = () => finish(false);
  raw.on('data', onData);
  raw.once('end', onEnd);
  raw.once('close', onClose);
  raw.resume();
}
