import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { KeyedCounter, KeyedHistogram } from '../../src/pipeline/state/keyed-metrics.js';
import { seededRandom } from '../helpers/seeded-random.js';

// The request path's counters and histograms render exactly what prom-client's own would for the
// same updates, so /metrics, dashboards and alerts cannot tell them apart.
test('keyed counters and histograms render like prom-client for the same updates', async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const buckets = [0.01, 0.05, 0.1, 0.5, 1, 5];
  const kh = new KeyedHistogram({ name: 'h_seconds', help: 'h', labelNames: ['model', 'streamed'] as const, buckets, registers: [ours] });
  const ph = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['model', 'streamed'] as const, buckets, registers: [theirs] });
  const kc = new KeyedCounter({ name: 'c_total', help: 'c', labelNames: ['model', 'code'] as const, registers: [ours] });
  const pc = new Counter({ name: 'c_total', help: 'c', labelNames: ['model', 'code'] as const, registers: [theirs] });
  const random = seededRandom(7);
  const models = ['a/x', 'b/y', 'c/"quoted"\\'];
  for (let i = 0; i < 500; i++) {
    const labels = { model: models[i % 3]!, streamed: i % 2 ? 'true' : 'false' };
    // Values on bucket bounds too: `le` is inclusive.
    const v = i % 7 === 0 ? buckets[i % buckets.length]! : random() * 8;
    kh.observe(labels, v);
    ph.observe(labels, v);
    const c = { model: models[i % 3]!, code: i % 5 === 0 ? 'upstream_timeout' : '' };
    kc.inc(c, i % 4);
    pc.inc(c, i % 4);
  }
  assert.equal(await ours.metrics(), await theirs.metrics());
  assert.match(await ours.metrics(), /h_seconds_bucket\{le="0.01",model="a\/x",streamed="false"\} \d+/);
  assert.throws(() => kc.inc({ model: 'a', code: '' }, -1), /cannot add -1/);
  assert.throws(() => kh.observe({ model: 'a', streamed: 'true' }, Number.NaN), /cannot observe NaN/);
});
