import type { ErrorBody, GatewayError } from '../../errors/gateway-error.js';

/**
 * The OpenAI-style error envelope of every failed request (SPEC §2.3): `{"error": {code, message,
 * kind, scope, type, param, request_id, …}}`, from the error catalog.
 * @see https://platform.openai.com/docs/guides/error-codes
 */
export function openAIErrorBody(err: GatewayError, requestId: string): { error: ErrorBody } {
  return { error: err.toBody(requestId) };
}
