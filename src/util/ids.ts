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

/** Base62 digits in byte (ASCII) order, so that a number written with them sorts as text. */
const SORTED_DIGITS = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Characters of the time prefix of a generation id: 62^8 ms reach the year 8889. */
const TIME_DIGITS = 8;

let prefixMs = -1;
let prefix = '';

/**
 * `ms` (unix ms) as {@link TIME_DIGITS} base62 digits in byte order: for any two times, the
 * text order of their prefixes is their time order. The last prefix is reused within its ms.
 */
export function timePrefix(ms: number): string {
  if (ms === prefixMs) return prefix;
  let out = '';
  let t = Math.max(0, Math.floor(ms));
  for (let i = 0; i < TIME_DIGITS; i++) {
    out = SORTED_DIGITS[t % 62]! + out;
    t = Math.floor(t / 62);
  }
  prefixMs = ms;
  prefix = out;
  return out;
}

/**
 * A generation id, `gen_<24 base62>`: the creation time in ms ({@link timePrefix}, 8
 * characters), then 16 random characters (95 bits). Ids made later sort after earlier ones, so
 * a new record's primary-key entry (and its `generation_tags` rows) land at the end of their
 * indexes instead of at a random page of them (see docs/performance.md, record writer).
 */
export const newGenerationId = (): string => `gen_${timePrefix(Date.now())}${randomId(16)}`;
/** A request id, `req_<20 base62>`; sent as `x-request-id`. */
export const newRequestId = (): string => `req_${randomId(20)}`;
/** A tool-call id for upstreams that send none, `call_<24 base62>`. */
export const newToolCallId = (): string => `call_${randomId(24)}`;
/** An MCP tool-call record id, `mcpc_<24 base62>`: time-ordered like {@link newGenerationId}. */
export const newMcpCallId = (): string => `mcpc_${timePrefix(Date.now())}${randomId(16)}`;
