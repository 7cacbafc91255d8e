import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeCost, picoToUsdString, toMicros } from '../../src/accounting/cost.js';

const usage = (p: number, c: number, cached: number | null = null) => ({
  promptTokens: p, completionTokens: c, cachedTokens: cached, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' as const,
});

test('prices parse exactly into micro-units', () => {
  assert.equal(toMicros('0.15'), 150000n);
  assert.equal(toMicros(0.075), 75000n);
  assert.equal(toMicros('3'), 3000000n);
  assert.equal(toMicros(0.1), 100000n);
  assert.throws(() => toMicros('0.0000001'), /more than 6 decimals/);
});

test('cost is exact: 72 prompt tokens at $0.15/M and 18 at $0.60/M', () => {
  const cost = computeCost(usage(72, 18), { prompt: 0.15, completion: 0.6, request: 0 });
  assert.equal(picoToUsdString(cost.total), '0.0000216');
});

test('cached tokens are charged at the cache-read price', () => {
  const cost = computeCost(usage(1000, 0, 400), { prompt: 0.15, completion: 0.6, cache_read: 0.075, request: 0 });
  assert.equal(picoToUsdString(cost.prompt), '0.00009');
  assert.equal(picoToUsdString(cost.cacheRead), '0.00003');
  assert.equal(picoToUsdString(cost.total), '0.00012');
});

test('a million additions of 0.1 USD-per-M costs do not drift', () => {
  let sum = 0n;
  for (let i = 0; i < 1_000_000; i++) sum += computeCost(usage(1, 0), { prompt: 0.1, completion: 0, request: 0 }).total;
  assert.equal(picoToUsdString(sum), '0.1');
});

test('a per-request price and unreported usage', () => {
  const cost = computeCost(null, { prompt: 1, completion: 1, request: '0.002' });
  assert.equal(picoToUsdString(cost.total), '0.002');
});
