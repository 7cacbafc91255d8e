import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Random bytes drawn 4 KiB at a time: one system call serves many ids. */
let pool = randomBytes(4096);
let offset = 0;

function nextByte(): number {
  if (offset >= pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  return pool[offset++]!;
}

/** A random base62 string of `length` characters (unbiased: bytes ≥ 248 are redrawn). */
export function randomId(length = 24): string {
  let out = '';
  while (out.length < length) {
    const b = nextByte();
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

/** A generation id, `gen_<24 base62>`. */
export const newGenerationId = (): string => `gen_${randomId(24)}`;
/** A request id, `req_<20 base62>`; sent as `x-request-id`. */
export const newRequestId = (): string => `req_${randomId(20)}`;
/** A tool-call id for upstreams that send none, `call_<24 base62>`. */
export const newToolCallId = (): string => `call_${randomId(24)}`;
