import type { Usage } from '../core/chat-types.js';
import type { PricingConfig } from '../config/schema.js';

/**
 * Exact money. Prices are USD per 1M tokens (and USD per request) with at most 6 decimals;
 * costs are integers of picodollars (1e-12 USD) held as bigint, so sums never drift.
 * tokens × (USD per 1M tokens) = tokens × micro-USD-per-1M … = picodollars.
 */

/** 1 USD in picodollars. */
export const PICO_PER_USD = 1_000_000_000_000n;

/**
 * Parse a decimal price into integer micro-units (value × 1e6), exactly.
 * @throws Error when the price has more than 6 decimals or is negative.
 */
export function toMicros(price: number | string): bigint {
  // Endpoints have a handful of prices: parse each once.
  let micros = microsCache.get(price);
  if (micros === undefined) {
    micros = parseMicros(price);
    if (microsCache.size >= 4096) microsCache.clear();
    microsCache.set(price, micros);
  }
  return micros;
}

const microsCache = new Map<number | string, bigint>();

function parseMicros(price: number | string): bigint {
  let text: string;
  if (typeof price === 'number') {
    if (!Number.isFinite(price) || price < 0) throw new Error(`invalid price "${price}"`);
    // Numbers carry binary float error (99999.99 is 99999.990000000005…): round to 6 decimals,
    // and refuse a value that 6 decimals cannot represent.
    text = price.toFixed(6);
    if (Number(text) !== price) throw new Error(`price "${price}" has more than 6 decimals`);
  } else {
    text = price.trim();
  }
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text);
  if (!m) throw new Error(`invalid price "${price}"`);
  const frac = (m[2] ?? '').replace(/0+$/, '');
  if (frac.length > 6) throw new Error(`price "${price}" has more than 6 decimals`);
  return BigInt(m[1]!) * 1_000_000n + BigInt(frac.padEnd(6, '0') || '0');
}

/** A cost broken down, in picodollars. */
export interface CostBreakdown {
  prompt: bigint;
  completion: bigint;
  cacheRead: bigint;
  cacheWrite: bigint;
  request: bigint;
  total: bigint;
}

/**
 * The cost of a generation at an endpoint's prices. Cached-read and cache-write tokens are
 * charged at their own prices when configured (else at the prompt price); unreported counts
 * cost nothing.
 */
export function computeCost(usage: Usage | null, pricing: PricingConfig): CostBreakdown {
  const promptPrice = toMicros(pricing.prompt);
  const readPrice = pricing.cache_read !== undefined ? toMicros(pricing.cache_read) : promptPrice;
  const writePrice = pricing.cache_write !== undefined ? toMicros(pricing.cache_write) : promptPrice;
  const cached = BigInt(usage?.cachedTokens ?? 0);
  const written = BigInt(usage?.cacheWriteTokens ?? 0);
  const promptAll = BigInt(usage?.promptTokens ?? 0);
  const promptPlain = promptAll - cached - written > 0n ? promptAll - cached - written : 0n;
  const prompt = promptPlain * promptPrice;
  const cacheRead = cached * readPrice;
  const cacheWrite = written * writePrice;
  const completion = BigInt(usage?.completionTokens ?? 0) * toMicros(pricing.completion);
  const request = toMicros(pricing.request) * 1_000_000n;
  return { prompt, completion, cacheRead, cacheWrite, request, total: prompt + completion + cacheRead + cacheWrite + request };
}

/** Picodollars as an exact decimal USD string (`"0.0000108"`). */
export function picoToUsdString(pico: bigint): string {
  const neg = pico < 0n;
  const abs = neg ? -pico : pico;
  const whole = abs / PICO_PER_USD;
  const frac = (abs % PICO_PER_USD).toString().padStart(12, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/** Picodollars as a JSON number of USD (for `usage.cost`; display only, never summed). */
export function picoToUsdNumber(pico: bigint): number {
  return Number(picoToUsdString(pico));
}
