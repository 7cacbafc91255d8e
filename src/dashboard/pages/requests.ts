// Requests: the generations, newest first, filtered by model, provider, status, key, tag,
// session and time, a page at a time (cursor paging). Each row opens the generation's page.
import { get, type Generation, type GenerationPage } from '../api';
import { breakable, field, h, labelled, replace, select } from '../dom';
import { clockTime, dateOnly, fromLocalInput, int, ms, shortId, usd } from '../format';
import { commonFilters, forgetKeys, keyNames, rangeControls, readRange } from '../shared';
import { badge, empty, errorBox, isAdmin, link, loading, pageHeader, route, table, type Column, type PageContext } from '../ui';

const FILTERS = ['model', 'provider', 'status', 'key_id', 'tag', 'session'] as const;
const PAGE_SIZES = ['25', '50', '100', '200'];

/** Cursors of the pages before the current one, per filter set (so "Newer" can go back). */
const previous = new Map<string, string[]>();

/** A time as two short lines (date, then clock) so the column stays narrow. */
function timeCell(iso: string): HTMLElement {
  return h('span', { title: iso }, h('span', { class: 'time-date' }, dateOnly(iso)), h('span', { class: 'time-clock' }, clockTime(iso)));
}

export async function requestsPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const admin = isAdmin(ctx.me);
  const p = ctx.params;
  const r = readRange(p, null);
  const asked = Number(p.get('limit'));
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= 200 ? String(asked) : '50';
  const cursor = p.get('cursor') ?? '';
  const values: Record<(typeof FILTERS)[number], string> = { model: '', provider: '', status: '', key_id: '', tag: '', session: '' };
  for (const f of FILTERS) values[f] = p.get(f) ?? '';
  if (!admin) values.key_id = '';

  // ---- filters (the Usage page's controls, then the status and session) ----
  const controls = rangeControls(r, true);
  const form = h(
    'form',
    { class: 'filters card', id: 'request-filters' },
    controls.el,
    commonFilters(ctx.me, values),
    labelled('Status', select('status', [['', 'Any'], ['success', 'Success'], ['error', 'Error'], ['refused', 'Refused'], ['cancelled', 'Cancelled']], values.status)),
    labelled('Session', h('input', { name: 'session', value: values.session, placeholder: 'any' })),
    labelled('Per page', select('limit', [...new Set([...PAGE_SIZES, limit])].sort((a, b) => Number(a) - Number(b)).map((s) => [s, s] as const), limit)),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Apply'), h('button', { type: 'button', class: 'btn btn-ghost', onclick: () => ctx.navigate('/requests') }, 'Reset')),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q: Record<string, string | number> = {};
    for (const f of FILTERS) {
      const v = field(form, f);
      if (v) q[f] = v;
    }
    if (controls.range.value === 'custom') {
      const f = fromLocalInput(controls.from.value);
      const t = fromLocalInput(controls.to.value);
      if (!Number.isNaN(f)) q.from = f;
      if (!Number.isNaN(t)) q.to = t;
    } else if (controls.range.value !== 'all') {
      q.range = controls.range.value;
    }
    if (field(form, 'limit') !== '50') q.limit = field(form, 'limit');
    ctx.navigate(route('/requests', q));
  });

  const idInput = h('input', { name: 'id', placeholder: 'gen_…', 'aria-label': 'Generation id', required: true });
  const lookup = h('form', { class: 'lookup', id: 'open-generation' }, idInput, h('button', { type: 'submit', class: 'btn' }, 'Open'));
  lookup.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.navigate(`/generation/${encodeURIComponent(idInput.value.trim())}`);
  });

  const body = h('div', { class: 'requests-body stack' }, loading('Loading requests…'));
  replace(root, pageHeader('Requests', admin ? 'Every generation through the gateway, newest first.' : `Generations of ${ctx.me.name}, newest first.`, lookup), form, body);

  /** The search of this page; a quick range ("last hour") is taken relative to now. */
  const query = (): Record<string, string | number | undefined> => {
    const now = readRange(p, null);
    const q: Record<string, string | number | undefined> = { ...values, limit, cursor: cursor || undefined };
    if (now.from !== null) q.from = new Date(now.from).toISOString();
    if (now.to !== null && now.range === null) q.to = new Date(now.to).toISOString();
    return q;
  };
  let page: GenerationPage;
  let names: Map<string, string>;
  try {
    [page, names] = await Promise.all([get<GenerationPage>('/v1/generations', query()), keyNames(ctx.me)]);
  } catch (err) {
    replace(body, errorBox(err, 'Requests could not be loaded:'));
    return;
  }
  const show = (next: GenerationPage) => {
    page = next;
    renderList();
  };
  // Live: the newest page picks up new requests (older pages do not change).
  if (!cursor) {
    let last = JSON.stringify(page);
    ctx.live(async () => {
      const next = await get<GenerationPage>('/v1/generations', query());
      const text = JSON.stringify(next);
      if (text === last) return;
      last = text;
      if (next.data.some((g) => g.api_key_id !== null && !names.has(g.api_key_id))) {
        forgetKeys();
        names = await keyNames(ctx.me);
      }
      show(next);
    });
  }

  // Paging: remember where each page started, per filter set.
  const signature = JSON.stringify({ ...values, from: p.get('from'), to: p.get('to'), range: p.get('range'), limit });
  const stack = previous.get(signature) ?? [];
  previous.set(signature, stack);
  if (!cursor) stack.length = 0;
  const here = (c: string | null) => {
    const q = new URLSearchParams(p);
    if (c) q.set('cursor', c);
    else q.delete('cursor');
    const qs = q.toString();
    return qs ? `/requests?${qs}` : '/requests';
  };

  const renderList = () => {
    const columns: Column<Generation>[] = [
      { title: 'Time', cell: (g) => timeCell(g.created_at) },
      // The id shortened (the full id in its tooltip and the generation page): 26 characters of monospace would take a sixth of the row.
      {
        title: 'Generation',
        className: 'mono',
        cell: (g) => {
          const a = link(`/generation/${encodeURIComponent(g.id)}`, shortId(g.id, 12));
          a.title = g.id;
          return a;
        },
      },
      { title: 'Model', className: 'col-model', cell: (g) => (g.requested_model !== g.model ? h('span', { title: `requested ${g.requested_model}` }, breakable(g.model), h('span', { class: 'muted' }, ' ↩')) : h('span', null, breakable(g.model))) },
      { title: 'Provider', cell: (g) => g.provider_name ?? h('span', { class: 'muted' }, '—') },
      { title: 'Status', cell: (g) => h('span', null, badge(g.refused ? 'refused' : g.status), g.error_code ? h('span', { class: 'muted small error-code' }, breakable(g.error_code)) : null) },
      { title: 'Tokens', numeric: true, cell: (g) => (g.tokens_prompt === null && g.tokens_completion === null ? '—' : `${int(g.tokens_prompt ?? 0)} → ${int(g.tokens_completion ?? 0)}`) },
      { title: 'Cost', numeric: true, cell: (g) => usd(g.total_cost) },
      { title: 'Latency', numeric: true, cell: (g) => ms(g.latency) },
      { title: 'TTFT', numeric: true, cell: (g) => ms(g.time_to_first_token) },
      {
        title: 'Tags · session',
        cell: (g) =>
          h(
            'span',
            { class: 'tags' },
            g.tags.map((t) => h('span', { class: 'tag' }, t)),
            g.session_id ? h('span', { class: 'tag tag-session', title: `session ${g.session_id}` }, shortId(g.session_id, 24)) : null,
          ),
      },
    ];
    if (admin) columns.push({ title: 'Key', cell: (g) => (g.api_key_id === null ? h('span', { class: 'muted nowrap' }, 'admin key') : (names.get(g.api_key_id) ?? g.api_key_id)) });

    const pager = h(
      'nav',
      { class: 'pager', 'aria-label': 'Pages' },
      h('button', { type: 'button', class: 'btn', disabled: !cursor, onclick: () => ctx.navigate(here(null)) }, '⇤ Newest'),
      h('button', { type: 'button', class: 'btn', id: 'page-newer', disabled: !cursor, onclick: () => ctx.navigate(here(stack.pop() ?? null)) }, '← Newer'),
      h(
        'button',
        {
          type: 'button',
          class: 'btn',
          id: 'page-older',
          disabled: !page.next_cursor,
          onclick: () => {
            stack.push(cursor);
            ctx.navigate(here(page.next_cursor));
          },
        },
        'Older →',
      ),
    );

    const filtered = FILTERS.some((f) => values[f]) || r.from !== null || r.to !== null;
    if (page.data.length === 0) {
      replace(body, empty(cursor ? 'No more requests.' : filtered ? 'No request matches these filters.' : 'No requests yet. Send one through the gateway and it appears here.'), cursor ? pager : null);
      return;
    }
    const list = table(columns, page.data, { rowAttrs: (g) => ({ 'data-id': g.id, class: 'clickable' }) });
    // The whole row opens the generation (the id cell is the keyboard-reachable link).
    list.addEventListener('click', (ev) => {
      const target = ev.target as HTMLElement;
      if (target.closest('a, button')) return;
      const row = target.closest<HTMLTableRowElement>('tr[data-id]');
      if (row?.dataset.id) ctx.navigate(`/generation/${encodeURIComponent(row.dataset.id)}`);
    });
    replace(
      body,
      h('section', { class: 'card list' }, h('p', { class: 'count' }, `${int(page.data.length)} request${page.data.length === 1 ? '' : 's'} on this page${page.next_cursor ? '; older ones on the next' : ''}.`), list),
      cursor || page.next_cursor ? pager : null,
    );
  };
  renderList();
}
