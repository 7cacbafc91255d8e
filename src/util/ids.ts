import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A random base62 string of `length` characters. */
export function randomId(length = 24): string {
  const bytes = randomBytes(length);
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[bytes[i]! % 62];
  return out;
}

/** A generation id, `gen_<24 base62>`. */
export const newGenerationId = (): string => `gen_${randomId(24)}`;
/** A request id, `req_<20 base62>`; sent as `x-request-id`. */
export const newRequestId = (): string => `req_${randomId(20)}`;
/** A tool-call id for upstreams that send none, `call_<24 base62>`. */
export const newToolCallId = (): string => `call_${randomId(24)}`;
