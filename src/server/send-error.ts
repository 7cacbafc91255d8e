import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../errors/gateway-error.js';

/**
 * Send an error envelope (SPEC §2.3) with its status, `x-request-id` and, for retryable
 * errors that carry one, `Retry-After`.
 */
export function sendError(reply: FastifyReply, err: GatewayError, requestId: string): void {
  if (reply.sent || reply.raw.headersSent) return;
  reply.header('x-request-id', requestId);
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  // OpenAI SDKs retry every 5xx unless told otherwise: a terminal error will fail again.
  if (err.kind === 'terminal') reply.header('x-should-retry', 'false');
  reply.code(err.status).type('application/json; charset=utf-8').send({ error: err.toBody(requestId) });
}
