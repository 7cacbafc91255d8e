/**
 * The logic of the instruction-count guard (bench/work-guard.ts, `npm run bench:work`): from
 * callgrind's per-phase counts to instructions per request, the comparison with the committed
 * baseline (bench/results/work-baseline.json) and the baseline a `--update` writes. Pure
 * functions, no valgrind: test/ops/work-compare.test.ts tests them.
 *
 * @see https://valgrind.org/docs/manual/cl-manual.html
 */

/** How far above its baseline a scenario may measure before the guard fails: 10 %. */
export const DEFAULT_MAX_RISE = 0.1;

/** Instructions of one scenario, per request. */
export interface ScenarioCount {
  /** Instructions per request through the gateway, minus the same request sent straight to the upstream: what the gateway adds. */
  added: number;
  /** Instructions per request of the whole process (client, upstream and gateway) in the gateway phase. */
  gateway: number;
  /** Instructions per request of the whole process in the direct phase (client and upstream only). */
  direct: number;
}

/** bench/results/work-baseline.json. */
export interface WorkBaseline {
  /** Why this baseline was written (a change that costs or saves work on purpose, a new Node version, …). */
  reason: string;
  /** ISO 8601 date and time it was measured. */
  date: string;
  /** `process.version` of the Node that ran the workload (counts differ between Node versions). */
  node: string;
  /** `valgrind --version`. */
  valgrind: string;
  /** Node flags of the workload, and callgrind's. */
  flags: { node: string[]; valgrind: string[] };
  /** Warm-up requests per scenario and target, and measured requests per scenario and target. */
  warmup: number;
  requests: number;
  /** How many runs were taken (the median of each scenario is kept). */
  runs: number;
  /** Instructions per request by scenario id; `added` is what the guard compares. */
  scenarios: Record<string, ScenarioCount>;
}

/** One row of the table the guard prints. */
export interface CompareRow {
  id: string;
  /** Measured instructions the gateway adds per request. */
  measured: number;
  /** The baseline's, when it has this scenario. */
  baseline: number | undefined;
  /** measured / baseline. */
  ratio: number | undefined;
  /** `ok`; `over`: more than maxRise above; `no-baseline`: the scenario is not in the baseline (update it on purpose). */
  status: 'ok' | 'over' | 'no-baseline';
}

export interface CompareResult {
  rows: CompareRow[];
  /** Scenarios of the baseline that were not measured (not a failure: a run may select scenarios). */
  unmeasured: string[];
  /** Differences between the measurement's setup and the baseline's that make the comparison shaky. */
  warnings: string[];
  /** True when no row is `over` or `no-baseline`. */
  ok: boolean;
}

/**
 * Instructions per request of every scenario, from the counts of the phases the workload marked
 * (bench/work-count.ts): `phases[i]` names the part callgrind dumped as `counts[i]`, the
 * scenarios' phases are named `<id>:direct` and `<id>:gateway`, each `requests` requests long.
 * @throws Error when the lengths differ, `requests` is not a positive integer, or a scenario lacks one of its two phases.
 */
export function perRequest(phases: readonly string[], counts: readonly number[], requests: number): Record<string, ScenarioCount> {
  if (phases.length !== counts.length) throw new Error(`work guard: ${phases.length} phases marked but ${counts.length} counts dumped (does something else call getpriority?)`);
  if (!Number.isInteger(requests) || requests < 1) throw new Error(`work guard: requests must be a positive integer, got ${requests}`);
  const by = new Map<string, { direct?: number; gateway?: number }>();
  phases.forEach((name, i) => {
    const m = /^(.+):(direct|gateway)$/.exec(name);
    if (!m) return;
    const entry = by.get(m[1]!) ?? {};
    entry[m[2] as 'direct' | 'gateway'] = counts[i]!;
    by.set(m[1]!, entry);
  });
  const out: Record<string, ScenarioCount> = {};
  for (const [id, { direct, gateway }] of by) {
    if (direct === undefined || gateway === undefined) throw new Error(`work guard: scenario ${id} lacks its ${direct === undefined ? 'direct' : 'gateway'} phase`);
    out[id] = { added: (gateway - direct) / requests, gateway: gateway / requests, direct: direct / requests };
  }
  return out;
}

/** The median of each scenario's counts over several runs (each field on its own). @throws Error for no runs. */
export function medianCounts(runs: readonly Record<string, ScenarioCount>[]): Record<string, ScenarioCount> {
  if (runs.length === 0) throw new Error('work guard: no runs');
  const med = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const mid = s.length >> 1;
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  };
  const out: Record<string, ScenarioCount> = {};
  for (const id of Object.keys(runs[0]!)) {
    const of = (f: keyof ScenarioCount) => med(runs.map((r) => r[id]?.[f] ?? Number.NaN));
    out[id] = { added: of('added'), gateway: of('gateway'), direct: of('direct') };
  }
  return out;
}

/** Spread of a series: (max − min) / median, as a fraction (0.02 = 2 %). */
export function spread(values: readonly number[]): { min: number; median: number; max: number; spread: number } {
  if (values.length === 0) throw new Error('work guard: no values');
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { min: s[0]!, median, max: s[s.length - 1]!, spread: (s[s.length - 1]! - s[0]!) / median };
}

/**
 * Compare measured counts with the baseline: a scenario fails when its `added` instructions per
 * request are more than `maxRise` (a fraction, 0.1 = 10 %) above the baseline's, or when the
 * baseline does not have it. Falling below the baseline never fails (update the baseline to
 * keep the gain).
 */
export function compare(measured: Record<string, ScenarioCount>, baseline: WorkBaseline | undefined, setup: Pick<WorkBaseline, 'node' | 'flags' | 'requests' | 'warmup'>, maxRise = DEFAULT_MAX_RISE): CompareResult {
  const rows: CompareRow[] = Object.entries(measured).map(([id, m]) => {
    const base = baseline?.scenarios[id]?.added;
    if (base === undefined || !(base > 0)) return { id, measured: m.added, baseline: undefined, ratio: undefined, status: 'no-baseline' };
    const ratio = m.added / base;
    return { id, measured: m.added, baseline: base, ratio, status: ratio > 1 + maxRise ? 'over' : 'ok' };
  });
  const warnings: string[] = [];
  if (!baseline) warnings.push('no baseline file: run with --update --reason "…" and commit it');
  else {
    if (baseline.node !== setup.node) warnings.push(`baseline measured on Node ${baseline.node}, this run on ${setup.node}: counts differ between Node versions`);
    if (JSON.stringify(baseline.flags) !== JSON.stringify(setup.flags)) warnings.push('baseline measured with other flags');
    if (baseline.requests !== setup.requests || baseline.warmup !== setup.warmup) warnings.push(`baseline measured with warmup ${baseline.warmup} and ${baseline.requests} requests, this run ${setup.warmup} and ${setup.requests}`);
  }
  const unmeasured = baseline ? Object.keys(baseline.scenarios).filter((id) => !(id in measured)) : [];
  return { rows, unmeasured, warnings, ok: rows.every((r) => r.status === 'ok') };
}

/**
 * The baseline an `--update` writes.
 * @throws Error when `reason` is missing or blank: a baseline is changed on purpose, with why.
 */
export function makeBaseline(measured: Record<string, ScenarioCount>, setup: Omit<WorkBaseline, 'reason' | 'scenarios' | 'date'>, reason: string | undefined, date = new Date()): WorkBaseline {
  if (reason === undefined || reason.trim() === '') throw new Error('work guard: --update needs --reason "why the baseline changes" (it is committed on purpose, in its own commit)');
  const round = (c: ScenarioCount): ScenarioCount => ({ added: Math.round(c.added), gateway: Math.round(c.gateway), direct: Math.round(c.direct) });
  return { reason: reason.trim(), date: date.toISOString(), ...setup, scenarios: Object.fromEntries(Object.entries(measured).map(([id, c]) => [id, round(c)])) };
}

/** The Markdown table the guard prints: measured, baseline, ratio, status per scenario. */
export function table(result: CompareResult, maxRise = DEFAULT_MAX_RISE): string {
  const fmt = (n: number | undefined) => (n === undefined ? '—' : Math.round(n).toLocaleString('en-US'));
  const lines = [
    `| scenario | instructions added per request | baseline | ratio | limit ${(1 + maxRise).toFixed(2)}× |`,
    '| --- | ---: | ---: | ---: | --- |',
    ...result.rows.map((r) => `| ${r.id} | ${fmt(r.measured)} | ${fmt(r.baseline)} | ${r.ratio === undefined ? '—' : `${r.ratio.toFixed(3)}×`} | ${r.status === 'ok' ? '✅' : r.status === 'over' ? '❌ over' : '❌ not in baseline'} |`),
  ];
  for (const w of result.warnings) lines.push('', `⚠ ${w}`);
  if (result.unmeasured.length) lines.push('', `(not measured in this run: ${result.unmeasured.join(', ')})`);
  return lines.join('\n');
}
