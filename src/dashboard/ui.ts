// Shared page pieces and the page contract.
import { ApiError, type KeyInfo } from './api';
import { h, type Child } from './dom';

/** What a page gets from the shell. */
export interface PageContext {
  /** The signed-in key (`is_admin` for the admin key). */
  me: KeyInfo;
  /** Path segments after the page name (`#/generation/gen_x` → ['gen_x']). */
  rest: string[];
  /** The hash's query (`#/requests?model=a` → model=a). */
  params: URLSearchParams;
  /** Go to a hash route (`/requests?…`). */
  navigate(route: string, options?: { replace?: boolean }): void;
  /** Run when the page is left (charts, timers). */
  onLeave(fn: () => void): void;
  /**
   * Live updates: `refresh` runs every {@link LIVE_INTERVAL_MS} while the page is shown, live
   * updates are on (the top bar's pause control) and the tab is visible; never two at once.
   * It should fetch quietly and change the page only when the data changed (no spinner).
   */
  live(refresh: () => Promise<void>): void;
}

/** How often a live page asks the gateway again (ms). */
export const LIVE_INTERVAL_MS = 3_000;

export type Page = (root: HTMLElement, ctx: PageContext) => void | Promise<void>;

export const isAdmin = (me: KeyInfo): boolean => me.is_admin === true;

/** A hash link to a route: `link('/requests?tag=a', 'a')`. */
export function link(route: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href: `#${route}` }, ...children);
}

/** A route with a query built from non-empty values. */
export function route(path: string, query: Record<string, string | number | null | undefined> = {}): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const qs = p.toString();
  return qs ? `${path}?${qs}` : path;
}

export function pageHeader(title: string, subtitle?: Child, ...actions: Child[]): HTMLElement {
  return h('header', { class: 'page-header' }, h('div', null, h('h1', null, title), subtitle ? h('p', { class: 'subtitle' }, subtitle) : null), actions.length ? h('div', { class: 'actions' }, actions) : null);
}

export function loading(what = 'Loading…'): HTMLElement {
  return h('div', { class: 'loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), what);
}

export function errorBox(err: unknown, prefix?: string): HTMLElement {
  const e = err instanceof ApiError ? err : null;
  const message = e ? e.message : err instanceof Error ? err.message : String(err);
  return h(
    'div',
    { class: 'alert alert-error', role: 'alert' },
    prefix ? h('strong', null, `${prefix} `) : null,
    message,
    e && e.code ? h('code', { class: 'alert-code' }, e.code) : null,
  );
}

export function notice(text: Child, kind: 'info' | 'success' | 'warn' = 'info'): HTMLElement {
  return h('div', { class: `alert alert-${kind}`, role: 'status' }, text);
}

export function empty(text: Child): HTMLElement {
  return h('div', { class: 'empty' }, text);
}

const STATUS_CLASS: Record<string, string> = { success: 'ok', error: 'bad', refused: 'refused', cancelled: 'warn', active: 'ok', disabled: 'muted', expired: 'bad', healthy: 'ok', down: 'bad', probing: 'warn', cooling: 'warn' };

export function badge(text: string, kind?: string): HTMLElement {
  return h('span', { class: `badge badge-${kind ?? STATUS_CLASS[text] ?? 'muted'}` }, text);
}

/** A big-number card; `name` becomes `data-stat` so a value can be found by what it is. */
export function stat(name: string, label: string, value: string, sub?: Child, title?: string): HTMLElement {
  return h('div', { class: 'card stat', 'data-stat': name }, h('div', { class: 'stat-label' }, label), h('div', { class: 'stat-value', title: title ?? null }, value), sub ? h('div', { class: 'stat-sub' }, sub) : null);
}

/** A two-column list of facts. */
export function facts(rows: readonly (readonly [string, Child] | null | false)[]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    rows.filter((r): r is readonly [string, Child] => Boolean(r)).map(([k, v]) => [h('dt', null, k), h('dd', null, v === null || v === undefined || v === '' ? '—' : v)]),
  );
}

/** A table; each column gives its header and how to render a row's cell. */
export interface Column<T> {
  title: string;
  cell: (row: T) => Child;
  numeric?: boolean;
  className?: string;
}

export function table<T>(columns: readonly Column<T>[], rows: readonly T[], options: { rowAttrs?: (row: T) => Record<string, string>; caption?: string } = {}): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'data' },
      options.caption ? h('caption', null, options.caption) : null,
      h('thead', null, h('tr', null, columns.map((c) => h('th', { class: c.numeric ? 'num' : null, scope: 'col' }, c.title)))),
      h(
        'tbody',
        null,
        rows.map((r) => h('tr', options.rowAttrs?.(r) ?? null, columns.map((c) => h('td', { class: [c.numeric ? 'num' : '', c.className ?? ''].join(' ').trim() || null }, c.cell(r))))),
      ),
    ),
  );
}
