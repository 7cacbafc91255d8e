/** The instruction-count guard's logic (bench/work-compare.ts): per-request counts, the 10 % threshold, the baseline an update writes. No valgrind. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compare, makeBaseline, medianCounts, perRequest, spread, table, type ScenarioCount, type WorkBaseline } from '../../bench/work-compare.js';

const SETUP = { node: 'v20.20.2', flags: { node: ['--single-threaded'], valgrind: ['--tool=callgrind'] }, requests: 100, warmup: 300 };

function baseline(scenarios: Record<string, number>, over: Partial<WorkBaseline> = {}): WorkBaseline {
  return {
    reason: 'test',
    date: '2026-01-01T00:00:00.000Z',
    valgrind: 'valgrind-3.19.0',
    runs: 1,
    ...SETUP,
    scenarios: Object.fromEntries(Object.entries(scenarios).map(([id, added]) => [id, { added, gateway: added + 1000, direct: 1000 }])),
    ...over,
  };
}

const counts = (added: Record<string, number>): Record<string, ScenarioCount> => Object.fromEntries(Object.entries(added).map(([id, a]) => [id, { added: a, gateway: a + 1000, direct: 1000 }]));

test('perRequest: (gateway phase − direct phase) / requests, other phases ignored', () => {
  const phases = ['warmup', 'gc', 'chat:direct', 'gc', 'chat:gateway', 'gc', 'chat-stream:direct', 'gc', 'chat-stream:gateway', 'gc'];
  const dumped = [9e9, 5e7, 100_000, 5e7, 1_100_000, 5e7, 200_000, 5e7, 2_700_000, 5e7];
  const out = perRequest(phases, dumped, 100);
  assert.deepEqual(out, {
    chat: { added: 10_000, gateway: 11_000, direct: 1_000 },
    'chat-stream': { added: 25_000, gateway: 27_000, direct: 2_000 },
  });
});

test('perRequest refuses counts that do not line up with the marks, and a scenario missing a phase', () => {
  assert.throws(() => perRequest(['warmup', 'chat:direct'], [1], 10), /2 phases marked but 1 counts dumped/);
  assert.throws(() => perRequest(['chat:gateway'], [1], 10), /scenario chat lacks its direct phase/);
  assert.throws(() => perRequest(['chat:direct', 'chat:gateway'], [1, 2], 0), /requests must be a positive integer/);
});

test('compare: 10 % above the baseline passes, 10.1 % fails, below always passes', () => {
  const base = baseline({ chat: 1_000_000, 'chat-stream': 2_000_000, anthropic: 1_500_000 });
  const r = compare(counts({ chat: 1_100_000, 'chat-stream': 2_202_000, anthropic: 900_000 }), base, SETUP);
  assert.deepEqual(
    r.rows.map((x) => [x.id, x.status, Number(x.ratio!.toFixed(3))]),
    [
      ['chat', 'ok', 1.1],
      ['chat-stream', 'over', 1.101],
      ['anthropic', 'ok', 0.6],
    ],
  );
  assert.equal(r.ok, false);
  assert.deepEqual(r.warnings, []);
  assert.equal(compare(counts({ chat: 1_099_999 }), base, SETUP).ok, true);
});

test('compare: a custom threshold, a scenario missing from the baseline fails, unmeasured ones are listed', () => {
  const base = baseline({ chat: 1_000_000, anthropic: 1_500_000 });
  assert.equal(compare(counts({ chat: 1_040_000 }), base, SETUP, 0.03).rows[0]!.status, 'over');
  const r = compare(counts({ chat: 1_000_000, 'chat-long': 3_000_000 }), base, SETUP);
  assert.equal(r.ok, false);
  assert.equal(r.rows[1]!.status, 'no-baseline');
  assert.equal(r.rows[1]!.ratio, undefined);
  assert.deepEqual(r.unmeasured, ['anthropic']);
});

test('compare: no baseline file fails every scenario; another Node version or other flags warn', () => {
  const none = compare(counts({ chat: 1 }), undefined, SETUP);
  assert.equal(none.ok, false);
  assert.match(none.warnings[0]!, /no baseline file/);
  const other = compare(counts({ chat: 1_000_000 }), baseline({ chat: 1_000_000 }, { node: 'v22.1.0', requests: 50 }), SETUP);
  assert.equal(other.ok, true);
  assert.equal(other.warnings.length, 2);
  assert.match(other.warnings[0]!, /Node v22\.1\.0, this run on v20\.20\.2/);
  assert.match(other.warnings[1]!, /warmup 300 and 50 requests, this run 300 and 100/);
});

test('makeBaseline refuses an update without a reason, and rounds the counts', () => {
  const setup = { ...SETUP, valgrind: 'valgrind-3.19.0', runs: 5 };
  assert.throws(() => makeBaseline(counts({ chat: 1 }), setup, undefined), /--update needs --reason/);
  assert.throws(() => makeBaseline(counts({ chat: 1 }), setup, '   '), /--update needs --reason/);
  const b = makeBaseline({ chat: { added: 1234.6, gateway: 2234.4, direct: 999.5 } }, setup, '  first baseline ', new Date('2026-12-02T21:00:00Z'));
  assert.equal(b.reason, 'first baseline');
  assert.equal(b.date, '2026-12-02T21:00:00.000Z');
  assert.equal(b.runs, 5);
  assert.deepEqual(b.scenarios, { chat: { added: 1235, gateway: 2234, direct: 1000 } });
  // What an update writes, the next check reads back as passing.
  assert.equal(compare({ chat: { added: 1234.6, gateway: 2234.4, direct: 999.5 } }, b, SETUP).ok, true);
});

test('medianCounts and spread', () => {
  const m = medianCounts([counts({ chat: 30 }), counts({ chat: 10 }), counts({ chat: 20 })]);
  assert.equal(m.chat!.added, 20);
  assert.equal(medianCounts([counts({ chat: 10 }), counts({ chat: 20 })]).chat!.added, 15);
  assert.throws(() => medianCounts([]), /no runs/);
  assert.deepEqual(spread([102, 100, 98, 101, 99]), { min: 98, median: 100, max: 102, spread: 0.04 });
});

test('table: measured, baseline, ratio and a mark per scenario', () => {
  const r = compare(counts({ chat: 1_200_000, anthropic: 1_000_000 }), baseline({ chat: 1_000_000 }), SETUP);
  const lines = table(r).split('\n');
  assert.equal(lines[0], '| scenario | instructions added per request | baseline | ratio | limit 1.10× |');
  assert.equal(lines[2], '| chat | 1,200,000 | 1,000,000 | 1.200× | ❌ over |');
  assert.equal(lines[3], '| anthropic | 1,000,000 | — | — | ❌ not in baseline |');
});
