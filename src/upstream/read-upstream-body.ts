import { GatewayError } from '../errors/gateway-error.js';

/** The error for an upstream response or event over a configured byte cap. */
export function oversizedResponse(providerId: string, what: string, capBytes: number, setting: string): GatewayError {
  return new GatewayError('upstream_invalid_response', `${what} is larger than ${capBytes} bytes (${setting}); refused`, {
    metadata: { provider_name: providerId, limit_bytes: capBytes },
  });
}

/**
 * Read a whole upstream response body as UTF-8 text, refusing it once it passes `maxBytes`:
 * reading stops there (the body is destroyed, freeing the connection), so memory stays bounded
 * whatever the upstream sends. A `content-length` over the cap is refused before reading.
 * @throws GatewayError `upstream_invalid_response` when the body is larger than `maxBytes`.
 */
export async function readUpstreamBody(
  body: AsyncIterable<Uint8Array> & { destroy?: () => unknown },
  headers: Record<string, string | string[] | undefined>,
  maxBytes: number,
  providerId: string,
): Promise<string> {
  const declared = Number(headers['content-length']);
  const tooLarge = () => oversizedResponse(providerId, 'the response body', maxBytes, 'server.upstream_max_response_bytes');
  if (Number.isFinite(declared) && declared > maxBytes) {
    body.destroy?.();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge(); // leaving the loop destroys the body
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
