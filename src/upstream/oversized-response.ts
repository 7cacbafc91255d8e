import { GatewayError } from '../errors/gateway-error.js';

/** The error for an upstream response or event over a configured byte cap. */
export function oversizedResponse(providerId: string, what: string, capBytes: number, setting: string): GatewayError {
  return new GatewayError('upstream_invalid_response', `${what} is larger than ${capBytes} bytes (${setting}); refused`, {
    metadata: { provider_name: providerId, limit_bytes: capBytes },
  });
}
