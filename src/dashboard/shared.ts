// Lookups several pages share (the catalog, key names) and time-range handling.
import { get, type KeyInfo, type Model } from './api';
import { h, select } from './dom';
import { toLocalInput } from './format';

let models: Promise<Model[]> | null = null;
let keys: Promise<KeyInfo[]> | null = null;

/** The model catalog (cached for the session; it changes only on a config reload). */
export function catalog(): Promise<Model[]> {
  models ??= get<{ data: Model[] }>('/v1/models').then(
    (r) => r.data,
    (err: unknown) => {
      models = null;
      throw err;
    },
  );
  return models;
}

/** Every key (admin only; cached until {@link forgetKeys}). */
export function allKeys(): Promise<KeyInfo[]> {
  keys ??= get<{ data: KeyInfo[] }>('/v1/keys').then(
    (r) => r.data,
    (err: unknown) => {
      keys = null;
      throw err;
    },
  );
  return keys;
}

export function forgetKeys(): void {
  keys = null;
}

/** Key id → display name: every key for the admin, the own key otherwise. */
export async function keyNames(me: KeyInfo): Promise<Map<string, string>> {
  const names = new Map<string, string>();
  if (me.is_admin || me.sso) {
    try {
      for (const k of await allKeys()) names.set(k.id, k.name);
    } catch {
      // names are a nicety: ids are shown instead
    }
  } else {
    names.set(me.id, me.name);
  }
  return names;
}

/** Quick ranges: [value, label, length in ms]. */
export const RANGES: readonly (readonly [string, string, number])[] = [
  ['1h', 'Last hour', 3_600_000],
  ['24h', 'Last 24 hours', 86_400_000],
  ['7d', 'Last 7 days', 7 * 86_400_000],
  ['30d', 'Last 30 days', 30 * 86_400_000],
  ['90d', 'Last 90 days', 90 * 86_400_000],
];

/** Parse a `from`/`to` hash value: unix ms or anything `Date` reads (ISO). */
function parseTime(v: string | null): number {
  if (!v) return NaN;
  return /^\d+$/.test(v) ? Number(v) : Date.parse(v);
}

export interface TimeRange {
  from: number | null;
  to: number | null;
  /** The quick range in use, if any. */
  range: string | null;
}

/**
 * The time range of a page's hash: explicit `from`/`to`, else a quick `range` (relative to
 * now, so a bookmarked "last 7 days" stays current), else `fallback` (null = no bound).
 */
export function readRange(params: URLSearchParams, fallback: string | null): TimeRange {
  const from = parseTime(params.get('from'));
  const to = parseTime(params.get('to'));
  if (!Number.isNaN(from) || !Number.isNaN(to)) return { from: Number.isNaN(from) ? null : from, to: Number.isNaN(to) ? null : to, range: null };
  const name = params.get('range') ?? fallback;
  const quick = RANGES.find(([v]) => v === name);
  if (!quick) return { from: null, to: null, range: name === 'all' ? 'all' : null };
  const now = Date.now();
  return { from: now - quick[2], to: now, range: quick[0] };
}

/** The range controls: a quick-range select plus explicit from/to (local time). */
export function rangeControls(r: TimeRange, allowAll: boolean): { el: HTMLElement; range: HTMLSelectElement; from: HTMLInputElement; to: HTMLInputElement } {
  const options: [string, string][] = RANGES.map(([v, label]) => [v, label]);
  if (allowAll) options.unshift(['all', 'All time']);
  options.push(['custom', 'Custom range']);
  const range = select('range', options, r.range ?? (r.from === null && r.to === null ? 'all' : 'custom'));
  const from = h('input', { type: 'datetime-local', name: 'from', value: r.from === null ? '' : toLocalInput(r.from), 'aria-label': 'From' });
  const to = h('input', { type: 'datetime-local', name: 'to', value: r.to === null ? '' : toLocalInput(r.to), 'aria-label': 'To' });
  // Editing a date switches to a custom range; picking a quick range clears the dates.
  const custom = () => {
    range.value = 'custom';
  };
  from.addEventListener('input', custom);
  to.addEventListener('input', custom);
  range.addEventListener('change', () => {
    const quick = RANGES.find(([v]) => v === range.value);
    if (quick) {
      const now = Date.now();
      from.value = toLocalInput(now - quick[2]);
      to.value = toLocalInput(now);
    } else if (range.value === 'all') {
      from.value = '';
      to.value = '';
    }
  });
  const el = h(
    'div',
    { class: 'range' },
    h('label', { class: 'field' }, h('span', { class: 'field-label' }, 'Time'), range),
    h('label', { class: 'field' }, h('span', { class: 'field-label' }, 'From'), from),
    h('label', { class: 'field' }, h('span', { class: 'field-label' }, 'To'), to),
  );
  return { el, range, from, to };
}

/**
 * The filter controls the Usage and Requests pages share, the same on both: model (the
 * catalog, as a select), provider, key (admin only) and tag, in that order.
 */
export function commonFilters(me: KeyInfo, values: { model: string; provider: string; key_id: string; tag: string }): HTMLElement[] {
  const modelSelect = select('model', [['', 'All models']], values.model);
  if (values.model) modelSelect.append(h('option', { value: values.model, selected: true }, values.model));
  void catalog()
    .then((models) => {
      for (const m of models) if (m.id !== values.model) modelSelect.append(h('option', { value: m.id }, m.id));
    })
    .catch(() => {});
  const keySelect = me.is_admin ? select('key_id', [['', 'All keys'], ['admin', 'admin key']], values.key_id) : null;
  if (keySelect) {
    void allKeys()
      .then((keys) => {
        for (const k of keys) keySelect.append(h('option', { value: k.id, selected: k.id === values.key_id }, `${k.name} (${k.id})`));
      })
      .catch(() => {});
  }
  const field = (label: string, control: HTMLElement) => h('label', { class: 'field' }, h('span', { class: 'field-label' }, label), control);
  return [
    field('Model', modelSelect),
    field('Provider', h('input', { name: 'provider', value: values.provider, placeholder: 'any' })),
    ...(keySelect ? [field('Key', keySelect)] : []),
    field('Tag', h('input', { name: 'tag', value: values.tag, placeholder: 'any' })),
  ];
}
