import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../errors/gateway-error.js';
import { openAIErrorBody } from '../ingress/openai/error-envelope.js';
import { ingressForPath } from '../ingress/registry.js';
import { errorHeaders } from '../pipeline/stages/client-response.js';

/**
 * Send an error that arises outside the pipeline (auth, unknown routes, body parsing) with its
 * status, `x-request-id`, `Retry-After` and `x-should-retry` (SPEC §2.3), in the error envelope
 * of the client API the path belongs to (OpenAI's for every other path).
 */
export function sendError(reply: FastifyReply, err: GatewayError, requestId: string): void {
  if (reply.sent || reply.raw.headersSent) return;
  const ingress = ingressForPath(reply.request.url.split('?', 1)[0]!);
  const body = ingress ? ingress.errorBody(err, requestId) : openAIErrorBody(err, requestId);
  reply.code(err.status).headers(errorHeaders(err, requestId)).type('application/json; charset=utf-8').send(body);
}
