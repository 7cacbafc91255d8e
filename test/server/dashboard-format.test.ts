/**
 * The dashboard's money formats (src/dashboard/format.ts, no DOM): exact amounts in tables,
 * rounded ones in summary cards, both from the API's exact decimal strings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { usd, usdRounded } from '../../src/dashboard/format.js';

test('summary cards: cents from $1 up, two significant digits below, half up, no floating point', () => {
  const cases: [string, string][] = [
    ['12.3456', '$12.35'],
    ['12.345', '$12.35'],
    ['12.344999', '$12.34'],
    ['1234.5', '$1,234.50'],
    ['1234567.994', '$1,234,567.99'],
    ['9.999', '$10.00'],
    ['1', '$1.00'],
    ['0.999', '$1.00'],
    ['0.35', '$0.35'],
    ['0.1', '$0.10'],
    ['0.012345', '$0.012'],
    ['0.000114', '$0.00011'],
    ['0.0000995', '$0.0001'],
    ['0.00005', '$0.00005'],
    ['0', '$0.00'],
    ['0.000000', '$0.00'],
    // Beyond a double's precision: still exact.
    ['90071992547409.935', '$90,071,992,547,409.94'],
    ['0.000000000001', '$0.000000000001'],
  ];
  for (const [value, shown] of cases) assert.equal(usdRounded(value), shown, value);
  assert.equal(usdRounded(null), '—');
});

test('tables: the exact amount, at least two decimals', () => {
  assert.equal(usd('0.000114'), '$0.000114');
  assert.equal(usd('12.3456'), '$12.3456');
  assert.equal(usd('1234'), '$1,234.00');
});
