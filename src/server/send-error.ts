import type { FastifyReply } from 'fastify';
import type { GatewayError } from '../errors/gateway-error.js';
import { openAIErrorBody } from '../ingress/openai/error-envelope.js';
import { ingressForPath } from '../ingress/registry.js';
import { isMcpPath, jsonRpcErrorBody } from '../mcp/mcp-errors.js';
import { errorHeaders } from '../pipeline/stages/client-response.js';

/**
 * Send an error that arises outside the pipeline (auth, unknown routes, body parsing) with its
 * status, `x-request-id`, `Retry-After` and `x-should-retry` (SPEC §2.3), in the error envelope
 * of the client API the path belongs to (OpenAI's for every other path). The MCP endpoints
 * (`/mcp`, `/mcp/…`) answer a JSON-RPC error body, and their 401s carry `WWW-Authenticate:
 * Bearer` (RFC 6750; no `resource_metadata`: the gateway's keys are not OAuth tokens).
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization
 */
export function sendError(reply: FastifyReply, err: GatewayError, requestId: string): void {
  if (reply.sent || reply.raw.headersSent) return;
  const path = reply.request.url.split('?', 1)[0]!;
  if (isMcpPath(path)) {
    if (err.status === 401) reply.header('www-authenticate', err.code === 'missing_api_key' ? 'Bearer realm="opinference"' : 'Bearer realm="opinference", error="invalid_token"');
    reply.code(err.status).headers(errorHeaders(err, requestId)).type('application/json; charset=utf-8').send(jsonRpcErrorBody(err, requestId));
    return;
  }
  const ingress = ingressForPath(path);
  const body = ingress ? ingress.errorBody(err, requestId) : openAIErrorBody(err, requestId);
  reply.code(err.status).headers(errorHeaders(err, requestId)).type('application/json; charset=utf-8').send(body);
}
