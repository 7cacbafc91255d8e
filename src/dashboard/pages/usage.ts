// Usage: totals, charts over time (spend, tokens, requests, errors) and a breakdown by model,
// provider, key, tag or session, over a date range.
import { get, type KeyInfo, type UsageResult, type UsageRow, type UsageStats } from '../api';
import { barChart, type Series } from '../charts';
import { field, h, labelled, replace, select } from '../dom';

type Bucket = 'minute' | 'hour' | 'day';
const MINUTE = 60_000;
/** Longest span of minute bars (the usage API's limit for bucket=minute). */
const MINUTE_SPAN = 6 * 3_600_000;
import { bucketLabel, fromLocalInput, int, ms, pct, shortId, usd, usdNumber, usdRounded } from '../format';
import { commonFilters, forgetKeys, keyNames, rangeControls, readRange } from '../shared';
import { empty, errorBox, isAdmin, link, loading, pageHeader, route, stat, table, type PageContext } from '../ui';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Groups drawn as their own series; the rest are summed into "other". */
const MAX_SERIES = 8;

type GroupBy = '' | 'model' | 'provider' | 'key' | 'tag' | 'session' | 'team' | 'user';

const GROUP_LABEL: Record<Exclude<GroupBy, ''>, string> = { model: 'Model', provider: 'Provider', key: 'Key', tag: 'Tag', session: 'Session', team: 'Team', user: 'End user' };
/** Sessions the usage API returns at most (the most requests in the range first). */
const TOP_SESSIONS = 100;

function groupName(groupBy: GroupBy, group: string | null, names: Map<string, string>): string {
  if (groupBy === 'key') return group === null ? 'admin key' : (names.get(group) ?? group);
  if (groupBy === 'team') return group === null ? '(no team)' : (names.get(group) ?? group);
  if (group === null) return groupBy === 'provider' ? '(no provider)' : groupBy === 'user' ? '(no end user)' : '(none)';
  return group;
}

/** Request filter of the Requests page matching a breakdown row. */
function requestsFilter(groupBy: GroupBy, group: string | null): Record<string, string> | null {
  if (groupBy === 'key') return { key_id: group ?? 'admin' }; // `admin`: the admin key's own requests
  // The Requests page has no team or end-user filter (yet): those rows are not links.
  if (groupBy === '' || groupBy === 'team' || groupBy === 'user' || group === null) return null;
  return { [groupBy]: group };
}

interface GroupTotal {
  group: string | null;
  name: string;
  requests: number;
  errors: number;
  refused: number;
  cancelled: number;
  prompt: number;
  completion: number;
  /** For ranking and the share column only; the cell shows the exact sum. */
  costNumber: number;
  /** Exact sum (USD decimal string). */
  cost: string;
}

/** Exact sum of USD decimal strings. */
function addUsd(a: string, b: string): string {
  const split = (s: string): [bigint, number] => {
    const [w = '0', f = ''] = s.split('.');
    return [BigInt(w + f), f.length];
  };
  const [ai, af] = split(a);
  const [bi, bf] = split(b);
  const scale = Math.max(af, bf);
  const total = ai * 10n ** BigInt(scale - af) + bi * 10n ** BigInt(scale - bf);
  if (scale === 0) return total.toString();
  const digits = total.toString().padStart(scale + 1, '0');
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/**
 * The bucket that fits the data: the span from the first to the last bucket with traffic (of
 * a first read by hour, or by day past 7 days) decides. Up to 6 hours of traffic is drawn by
 * minute, up to 3 days by hour, longer by day; the chart then starts at the first traffic.
 */
function fitBucket(result: UsageResult): { bucket: Bucket; from: number } | null {
  if (result.data.length === 0) return null;
  const size = result.bucket === 'day' ? DAY : HOUR;
  const first = Math.min(...result.data.map((r) => Date.parse(r.bucket)));
  const last = Math.max(...result.data.map((r) => Date.parse(r.bucket))) + size;
  const span = last - first;
  if (span <= MINUTE_SPAN) return { bucket: 'minute', from: first };
  if (span <= 3 * DAY) return { bucket: 'hour', from: first };
  return { bucket: 'day', from: first };
}

export async function usagePage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const admin = isAdmin(ctx.me);
  const p = ctx.params;
  const bucketParam = p.get('bucket') ?? 'auto';
  const groupBy = (['model', 'provider', 'key', 'tag', 'session', 'team', 'user'].includes(p.get('group_by') ?? '') ? p.get('group_by') : '') as GroupBy;
  const filters = { model: p.get('model') ?? '', provider: p.get('provider') ?? '', key_id: p.get('key_id') ?? '', tag: p.get('tag') ?? '' };
  /** The range now (a quick range moves with the clock). */
  const span = () => {
    const r = readRange(p, '7d');
    const to = r.to ?? Date.now();
    return { r, to, from: r.from ?? to - 7 * DAY };
  };
  const first = span();

  // ---- controls (the Requests page's, then the chart's) ----
  const controls = rangeControls({ ...first.r, from: first.from, to: first.to }, false);
  const groupOptions: [string, string][] = [['', 'Nothing'], ['model', 'Model'], ['provider', 'Provider']];
  if (admin) groupOptions.push(['key', 'Key'], ['team', 'Team']);
  groupOptions.push(['tag', 'Tag'], ['session', 'Session'], ['user', 'End user']);
  const form = h(
    'form',
    { class: 'filters card', id: 'usage-filters' },
    controls.el,
    commonFilters(ctx.me, filters),
    labelled('Break down by', select('group_by', groupOptions, groupBy)),
    labelled('Bucket', select('bucket', [['auto', 'Auto (fits the data)'], ['minute', 'Minute'], ['hour', 'Hour'], ['day', 'Day (UTC)']], bucketParam)),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply'), h('button', { type: 'button', class: 'btn btn-ghost', onclick: () => ctx.navigate('/usage') }, 'Reset')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const rangeValue = controls.range.value;
    const q: Record<string, string | number> = {};
    if (rangeValue === 'custom') {
      const f = fromLocalInput(controls.from.value);
      const t = fromLocalInput(controls.to.value);
      if (!Number.isNaN(f)) q.from = f;
      if (!Number.isNaN(t)) q.to = t;
    } else {
      q.range = rangeValue;
    }
    for (const name of ['bucket', 'group_by', 'model', 'provider', 'key_id', 'tag']) {
      const v = field(form, name);
      if (v && !(name === 'bucket' && v === 'auto')) q[name] = v;
    }
    ctx.navigate(route('/usage', q));
  });

  const body = h('div', { class: 'usage-body stack' }, loading('Loading usage…'));
  replace(root, pageHeader('Usage', admin ? 'Spend, tokens, requests and errors of every key.' : `Spend, tokens, requests and errors of ${ctx.me.name}.`), form, body);

  /** The totals of the whole range, and the chart's read in the bucket that fits (see {@link fitBucket}). */
  const read = async (): Promise<{ totals: UsageResult; chart: UsageResult }> => {
    const { from, to } = span();
    const ask = (b: Bucket, f: number) =>
      get<UsageResult>('/v1/usage', { from: new Date(f).toISOString(), to: new Date(to).toISOString(), bucket: b, group_by: groupBy || undefined, ...filters });
    if (bucketParam === 'minute' || bucketParam === 'hour' || bucketParam === 'day') {
      const minuteFrom = bucketParam === 'minute' ? Math.max(from, to - MINUTE_SPAN) : from;
      const totals = await ask(bucketParam === 'minute' ? (to - from <= 7 * DAY ? 'hour' : 'day') : bucketParam, from);
      return { totals, chart: bucketParam === 'minute' ? await ask('minute', minuteFrom) : totals };
    }
    const totals = await ask(to - from <= 7 * DAY ? 'hour' : 'day', from);
    const fit = fitBucket(totals);
    if (!fit || fit.bucket === totals.bucket) return { totals, chart: totals };
    return { totals, chart: await ask(fit.bucket, Math.max(fit.from, from)) };
  };

  let shown: { totals: UsageResult; chart: UsageResult };
  let names: Map<string, string>;
  try {
    [shown, names] = await Promise.all([read(), groupBy === 'team' ? teamNames() : keyNames(ctx.me)]);
  } catch (err) {
    replace(body, errorBox(err, 'Usage could not be loaded:'));
    return;
  }
  /** What the page shows of a read: a new render only when one of these changed. */
  const signature = (x: typeof shown) => JSON.stringify([x.totals.totals, x.totals.data, x.chart.bucket, x.chart.data]);
  let last = signature(shown);
  let leaveCharts = renderUsage(body, shown.totals, shown.chart, groupBy, names, ctx.me);
  ctx.onLeave(() => leaveCharts());
  ctx.live(async () => {
    const next = await read();
    const sig = signature(next);
    if (sig === last) return;
    last = sig;
    if (groupBy === 'key' && next.totals.data.some((r) => r.group !== null && !names.has(r.group))) {
      forgetKeys();
      names = await keyNames(ctx.me);
    }
    leaveCharts();
    leaveCharts = renderUsage(body, next.totals, next.chart, groupBy, names, ctx.me);
  });
}

/** Team names by id (admin key); ids are shown where the list cannot be read. */
async function teamNames(): Promise<Map<string, string>> {
  try {
    return new Map((await get<{ data: { id: string; name: string }[] }>('/v1/teams')).data.map((t) => [t.id, t.name]));
  } catch {
    return new Map();
  }
}

/** Render the cards, charts and breakdown; returns what tears the charts down. */
function renderUsage(body: HTMLElement, result: UsageResult, chart: UsageResult, groupBy: GroupBy, names: Map<string, string>, me: KeyInfo): () => void {
  const t: UsageStats = result.totals;
  const tokens = t.prompt_tokens + t.completion_tokens;
  const cards = h(
    'div',
    { class: 'stats' },
    stat('spend', 'Spend', usdRounded(t.cost), `${dateSpan(result)}`, `exactly ${usd(t.cost)}`),
    stat('requests', 'Requests', int(t.requests), t.cancelled ? `${int(t.cancelled)} cancelled` : null),
    stat('tokens', 'Tokens', int(tokens), `${int(t.prompt_tokens)} prompt · ${int(t.completion_tokens)} completion${t.reasoning_tokens ? ` · ${int(t.reasoning_tokens)} reasoning` : ''}`),
    stat('errors', 'Errors', int(t.errors), t.requests ? `${pct(t.errors / t.requests)} · at a provider or the gateway` : null),
    stat('refused', 'Refused', int(t.refused), t.requests ? `${pct(t.refused / t.requests)} · invalid, over a limit, unknown model` : null),
    stat('latency', 'Latency p50', ms(t.latency_ms?.p50), t.latency_ms ? `p90 ${ms(t.latency_ms.p90)} · p99 ${ms(t.latency_ms.p99)}` : null),
    stat('ttft', 'First token p50', ms(t.ttft_ms?.p50), t.ttft_ms ? `p90 ${ms(t.ttft_ms.p90)} · p99 ${ms(t.ttft_ms.p99)}` : null),
  );
  if (t.requests === 0 && result.data.length === 0) {
    replace(body, cards, empty('No requests in this range. Send one through the gateway and it shows up here within a few seconds (the page refreshes while Live is on).'));
    return () => {};
  }

  // ---- series: every bucket of the range, the top groups by spend (then requests) ----
  const step = chart.bucket === 'day' ? DAY : chart.bucket === 'minute' ? MINUTE : HOUR;
  // A read refitted to the data (a finer bucket) starts at its first bar with traffic.
  const start = chart !== result && chart.data.length ? Math.min(...chart.data.map((r) => Date.parse(r.bucket))) : Date.parse(chart.from);
  const end = Date.parse(chart.to);
  const buckets: number[] = [];
  for (let b = start; b < end && buckets.length < 2000; b += step) buckets.push(b);
  const index = new Map(buckets.map((b, i) => [b, i]));

  const totals = new Map<string, GroupTotal>();
  const keyOf = (g: string | null) => g ?? '\u0000';
  for (const row of result.data) {
    const k = keyOf(row.group);
    let g = totals.get(k);
    if (!g) totals.set(k, (g = { group: row.group, name: groupName(groupBy, row.group, names), requests: 0, errors: 0, refused: 0, cancelled: 0, prompt: 0, completion: 0, costNumber: 0, cost: '0' }));
    g.requests += row.requests;
    g.errors += row.errors;
    g.refused += row.refused;
    g.cancelled += row.cancelled;
    g.prompt += row.prompt_tokens;
    g.completion += row.completion_tokens;
    g.costNumber += Number(row.cost);
    g.cost = addUsd(g.cost, row.cost);
  }
  const ranked = [...totals.values()].sort((a, b) => b.costNumber - a.costNumber || b.requests - a.requests || a.name.localeCompare(b.name));
  const drawn = groupBy ? ranked.slice(0, MAX_SERIES) : ranked;
  const drawnKeys = new Set(drawn.map((g) => keyOf(g.group)));
  const hasOther = ranked.length > drawn.length;

  const seriesOf = (value: (row: UsageRow) => number): Series[] => {
    const out = new Map<string, Series>();
    for (const g of drawn) out.set(keyOf(g.group), { label: groupBy ? g.name : 'All', values: new Array<number>(buckets.length).fill(0) });
    if (hasOther) out.set('\u0001other', { label: 'other', values: new Array<number>(buckets.length).fill(0) });
    for (const row of chart.data) {
      const i = index.get(Date.parse(row.bucket));
      if (i === undefined) continue;
      const s = out.get(drawnKeys.has(keyOf(row.group)) ? keyOf(row.group) : '\u0001other');
      if (s) s.values[i]! += value(row);
    }
    return [...out.values()];
  };
  const labels = buckets.map((b) => bucketLabel(b, chart.bucket));
  const charts = [
    barChart({ name: 'spend', title: 'Spend (USD)', labels, series: seriesOf((row) => Number(row.cost)), format: usdNumber }),
    barChart({ name: 'tokens', title: 'Tokens (prompt + completion)', labels, series: seriesOf((row) => row.prompt_tokens + row.completion_tokens), format: (v) => int(v), integer: true }),
    barChart({ name: 'requests', title: 'Requests', labels, series: seriesOf((row) => row.requests), format: (v) => int(v), integer: true }),
    barChart({ name: 'errors', title: 'Errors', labels, series: seriesOf((row) => row.errors), format: (v) => int(v), integer: true }),
  ];

  const breakdown = groupBy
    ? h(
        'section',
        { class: 'card', id: 'breakdown' },
        h('h2', null, `By ${GROUP_LABEL[groupBy].toLowerCase()}`),
        table<GroupTotal>(
          [
            {
              title: GROUP_LABEL[groupBy],
              cell: (g) => {
                const f = requestsFilter(groupBy, g.group);
                const name = groupBy === 'session' ? shortId(g.name, 40) : g.name;
                const a = f ? link(route('/requests', f), name) : h('span', null, name);
                if (name !== g.name) a.title = g.name;
                return a;
              },
            },
            { title: 'Requests', numeric: true, cell: (g) => int(g.requests) },
            { title: 'Errors', numeric: true, cell: (g) => (g.errors ? `${int(g.errors)} (${pct(g.errors / g.requests)})` : '0') },
            { title: 'Refused', numeric: true, cell: (g) => (g.refused ? `${int(g.refused)} (${pct(g.refused / g.requests)})` : '0') },
            { title: 'Prompt tokens', numeric: true, cell: (g) => int(g.prompt) },
            { title: 'Completion tokens', numeric: true, cell: (g) => int(g.completion) },
            { title: 'Spend', numeric: true, cell: (g) => usd(g.cost) },
            { title: 'Share of spend', numeric: true, cell: (g) => (Number(t.cost) > 0 ? pct(g.costNumber / Number(t.cost)) : '—') },
          ],
          ranked,
          { rowAttrs: (g) => ({ 'data-group': g.group ?? '' }) },
        ),
        groupBy === 'tag' ? h('p', { class: 'hint' }, 'A request with several tags counts under each of them; the totals above count it once.') : null,
        groupBy === 'session'
          ? h('p', { class: 'hint' }, `The ${TOP_SESSIONS} sessions with the most requests in this range; requests without a session (op.session) are not listed. The totals above count every request.`)
          : null,
      )
    : null;

  replace(
    body,
    cards,
    h('div', { class: 'charts' }, charts.map((c) => c.el)),
    breakdown,
    h('p', { class: 'hint', id: 'bucket-hint' }, { day: 'Bars are UTC days', hour: 'Bars are hours', minute: 'Bars are minutes' }[chart.bucket], start > Date.parse(result.from) ? ', from the first request in the range. ' : '. ', me.is_admin ? 'Every key is counted.' : 'Only this key is counted.'),
  );
  return () => charts.forEach((c) => c.destroy());
}

function dateSpan(result: UsageResult): string {
  const f = new Date(result.from);
  const t = new Date(result.to);
  const d = (x: Date) => x.toLocaleDateString('en-GB', { day: '2-digit', month: 'short' });
  return d(f) === d(new Date(t.getTime() - 1)) ? d(f) : `${d(f)} – ${d(new Date(t.getTime() - 1))}`;
}
