// Keys. The admin key creates keys (the secret is shown once), disables and enables them, sets
// their limits and sees their spend; any other key sees its own card.
import { get, request, type KeyInfo } from '../api';
import { copyText, field, h, labelled, replace, select } from '../dom';
import { dateTime, fromLocalInput, int, pct, toLocalInput, usd } from '../format';
import { allKeys, forgetKeys } from '../shared';
import { badge, empty, errorBox, facts, isAdmin, link, loading, notice, pageHeader, route, table, type PageContext } from '../ui';

const RESETS: readonly (readonly [string, string])[] = [
  ['never', 'Never (lifetime)'],
  ['daily', 'Daily'],
  ['weekly', 'Weekly'],
  ['monthly', 'Monthly'],
];
const USD = /^\d+(\.\d{1,6})?$/;

function status(k: KeyInfo): 'active' | 'disabled' | 'expired' {
  if (k.disabled) return 'disabled';
  if (k.expires_at && Date.parse(k.expires_at) <= Date.now()) return 'expired';
  return 'active';
}

function retentionText(r: KeyInfo['retention']): string {
  if (r === null || r === undefined) return 'gateway default';
  if (r === 'none') return 'none (text not stored)';
  return `${r} day${r === 1 ? '' : 's'}`;
}

function rateText(k: KeyInfo): string {
  const rl = k.rate_limit;
  const parts: string[] = [];
  if (rl?.requests_per_minute) parts.push(`${int(rl.requests_per_minute)} req/min`);
  if (rl?.tokens_per_minute) parts.push(`${int(rl.tokens_per_minute)} tokens/min`);
  return parts.length ? parts.join(' · ') : 'none';
}

const resetWord: Record<string, string> = { daily: 'today', weekly: 'this week', monthly: 'this month', never: 'in total' };

/** The models a key may use: each id as a tag, or "all". */
function modelsCell(k: KeyInfo): HTMLElement {
  const ids = k.allowed_models ?? [];
  if (ids.length === 0) return h('span', { class: 'muted', 'data-allowed-models': '' }, 'all');
  return h('span', { class: 'tags', 'data-allowed-models': ids.join(',') }, ids.map((id) => h('span', { class: 'tag mono' }, id)));
}

/** Spend against the credit limit, with a bar. */
function spend(k: KeyInfo): HTMLElement {
  const used = k.usage ?? '0';
  if (k.limit === null) return h('div', { class: 'spend' }, usd(used), h('span', { class: 'muted small' }, ` ${resetWord[k.limit_reset ?? 'never'] ?? ''} · no limit`));
  const share = Number(k.limit) > 0 ? Math.min(1, Number(used) / Number(k.limit)) : 1;
  const bar = h('div', { class: `meter${share >= 1 ? ' meter-full' : share >= 0.8 ? ' meter-high' : ''}`, role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': Math.round(share * 100), 'aria-label': 'share of the limit spent' }, h('div', { class: 'meter-fill' }));
  (bar.firstChild as HTMLElement).style.width = `${(share * 100).toFixed(1)}%`;
  return h(
    'div',
    { class: 'spend' },
    h('div', null, `${usd(used)} of ${usd(k.limit)}`, h('span', { class: 'muted small' }, ` ${resetWord[k.limit_reset ?? 'never'] ?? ''}`)),
    bar,
    h('div', { class: 'muted small' }, `${usd(k.limit_remaining)} left (${pct(1 - share, 0)})`),
  );
}

/** The fields of a key form, filled from `k` when editing. Returns the body to send, or an error. */
function keyFields(k: KeyInfo | null): { el: HTMLElement[]; read: (form: HTMLFormElement) => Record<string, unknown> | string } {
  const retention = k?.retention;
  const retentionOptions: [string, string][] = [['', 'Gateway default'], ['none', 'None (keep no text)'], ['1', '1 day'], ['7', '7 days'], ['30', '30 days'], ['90', '90 days']];
  if (typeof retention === 'number' && !retentionOptions.some(([v]) => v === String(retention))) retentionOptions.push([String(retention), `${retention} days`]);
  const el = [
    labelled('Name', h('input', { name: 'name', required: true, maxlength: 200, value: k?.name ?? '', placeholder: 'my-app', autocomplete: 'off' })),
    labelled('Credit limit (USD)', h('input', { name: 'limit', inputmode: 'decimal', value: k?.limit ?? '', placeholder: 'no limit' }), 'e.g. 1 or 0.50; empty for none'),
    labelled('Limit resets', select('limit_reset', RESETS, k?.limit_reset ?? 'never')),
    labelled('Requests per minute', h('input', { name: 'rpm', type: 'number', min: 1, step: 1, value: k?.rate_limit?.requests_per_minute ?? '', placeholder: 'no limit' })),
    labelled('Tokens per minute', h('input', { name: 'tpm', type: 'number', min: 1, step: 1, value: k?.rate_limit?.tokens_per_minute ?? '', placeholder: 'no limit' })),
    labelled('Text retention', select('retention', retentionOptions, retention === null || retention === undefined ? '' : String(retention))),
    labelled('Allowed models', h('input', { name: 'allowed_models', value: (k?.allowed_models ?? []).join(', '), placeholder: 'all models' }), 'comma-separated ids'),
    labelled('Expires', h('input', { name: 'expires_at', type: 'datetime-local', value: k?.expires_at ? toLocalInput(Date.parse(k.expires_at)) : '' }), 'empty for never'),
  ];
  const read = (form: HTMLFormElement): Record<string, unknown> | string => {
    const name = field(form, 'name');
    if (!name) return 'A key needs a name.';
    const limit = field(form, 'limit').replace(/^\$/, '');
    if (limit && !USD.test(limit)) return 'The credit limit must be an amount in USD like 1 or 0.25 (at most 6 decimals).';
    const num = (v: string) => (v ? Number(v) : null);
    const rpm = num(field(form, 'rpm'));
    const tpm = num(field(form, 'tpm'));
    if ((rpm !== null && !(Number.isInteger(rpm) && rpm >= 1)) || (tpm !== null && !(Number.isInteger(tpm) && tpm >= 1))) return 'Rate limits are whole numbers of at least 1.';
    const r = field(form, 'retention');
    const expires = fromLocalInput(field(form, 'expires_at'));
    return {
      name,
      limit: limit || null,
      limit_reset: field(form, 'limit_reset') || 'never',
      rate_limit: { requests_per_minute: rpm, tokens_per_minute: tpm },
      retention: r === '' ? null : r === 'none' ? 'none' : Number(r),
      allowed_models: field(form, 'allowed_models')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
      expires_at: Number.isNaN(expires) ? null : new Date(expires).toISOString(),
    };
  };
  return { el, read };
}

/** The calling key's own card (any key that is not the admin key). */
function ownCard(me: KeyInfo): HTMLElement {
  return h(
    'section',
    { class: 'card key-card', id: 'own-key', 'data-key-id': me.id },
    h('div', { class: 'key-card-head' }, h('h2', null, me.name), badge(status(me))),
    h('div', { class: 'key-card-spend' }, spend(me)),
    facts([
      ['Key id', h('code', null, me.id)],
      ['Key', me.label ? h('code', null, me.label) : null],
      ['Credit limit', me.limit === null ? 'none' : `${usd(me.limit)} (${me.limit_reset ?? 'never'})`],
      ['Remaining', me.limit_remaining === null ? '—' : usd(me.limit_remaining)],
      ['Rate limits', rateText(me)],
      ['Spent today', usd(me.usage_daily)],
      ['Spent this week', usd(me.usage_weekly)],
      ['Spent this month', usd(me.usage_monthly)],
      ['Spent in total', usd(me.usage_total)],
      ['Allowed models', modelsCell(me)],
      ['Text retention', retentionText(me.retention)],
      ['Expires', me.expires_at ? dateTime(me.expires_at) : 'never'],
      ['Created', dateTime(me.created_at)],
    ]),
    h('p', { class: 'hint' }, 'Limits are set by the gateway administrator. ', link(route('/usage', {}), 'Usage'), ' · ', link('/requests', 'Requests')),
  );
}

export async function keysPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  if (!isAdmin(ctx.me) && !ctx.me.sso) {
    replace(root, pageHeader('My key', 'The key you signed in with: its limits and what it has spent.'), loading());
    try {
      const me = (await get<{ data: KeyInfo }>('/v1/key')).data;
      replace(root, pageHeader('My key', 'The key you signed in with: its limits and what it has spent.'), ownCard(me));
      let last = JSON.stringify(me);
      ctx.live(async () => {
        const next = (await get<{ data: KeyInfo }>('/v1/key')).data;
        const text = JSON.stringify(next);
        if (text === last) return;
        last = text;
        root.querySelector('#own-key')?.replaceWith(ownCard(next));
      });
    } catch (err) {
      replace(root, pageHeader('My key'), errorBox(err));
    }
    return;
  }

  const flash = h('div', { class: 'flash', 'aria-live': 'polite' });
  const secretBox = h('div', { id: 'secret-slot' });
  const listBox = h('section', { class: 'card', id: 'key-list' }, h('h2', null, 'Keys'), loading());

  // ---- create ----
  const createFields = keyFields(null);
  const createStatus = h('div', { 'aria-live': 'polite' });
  const createForm = h(
    'form',
    { class: 'card key-form', id: 'create-key' },
    h('h2', null, 'Create a key'),
    h('div', { class: 'form-grid' }, createFields.el),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create key')),
    createStatus,
  );
  createForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const body = createFields.read(createForm);
    if (typeof body === 'string') return replace(createStatus, errorBox(new Error(body)));
    // Leave out what is unset so the gateway's defaults apply.
    for (const k of ['limit', 'retention', 'expires_at'] as const) if (body[k] === null) delete body[k];
    const rl = body.rate_limit as Record<string, number | null>;
    for (const k of Object.keys(rl)) if (rl[k] === null) delete rl[k];
    replace(createStatus, loading('Creating…'));
    request<{ data: KeyInfo; key: string }>('POST', '/v1/keys', { body })
      .then((res) => {
        createForm.reset();
        replace(createStatus);
        showSecret(secretBox, res.data, res.key);
        forgetKeys();
        void loadList();
      })
      .catch((err: unknown) => replace(createStatus, errorBox(err, 'The key was not created:')));
  });

  // A single sign-on viewer reads the keys of their teams; only admins and team admins change them.
  const canManage = isAdmin(ctx.me) || ctx.me.manages_keys === true;
  replace(root, pageHeader('Keys', canManage ? 'Create keys with budgets and rate limits, disable a runaway one, see what each spends.' : 'The keys of your teams and what each spends (read only).'), flash, secretBox, canManage ? createForm : null, listBox);

  const patch = async (k: KeyInfo, body: Record<string, unknown>, done: string): Promise<boolean> => {
    try {
      await request('PATCH', `/v1/keys/${encodeURIComponent(k.id)}`, { body });
      forgetKeys();
      replace(flash, notice(done, 'success'));
      await loadList();
      return true;
    } catch (err) {
      replace(flash, errorBox(err, `${k.name}:`));
      return false;
    }
  };

  async function loadList(): Promise<void> {
    let keys: KeyInfo[];
    try {
      keys = await allKeys();
    } catch (err) {
      replace(listBox, h('h2', null, 'Keys'), errorBox(err));
      return;
    }
    if (keys.length === 0) {
      replace(listBox, h('h2', null, 'Keys'), empty('No keys yet. Create one above, or with `opinference keys create --name NAME`.'));
      return;
    }
    const editRow = (k: KeyInfo, cols: number): HTMLTableRowElement => {
      const f = keyFields(k);
      const st = h('div', { 'aria-live': 'polite' });
      const form = h(
        'form',
        { class: 'key-form inline-form', 'data-edit': k.id },
        h('div', { class: 'form-grid' }, f.el),
        h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save'), h('button', { type: 'button', class: 'btn btn-ghost', onclick: () => row.remove() }, 'Cancel')),
        st,
      );
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const body = f.read(form);
        if (typeof body === 'string') return replace(st, errorBox(new Error(body)));
        void patch(k, body, `Saved ${String(body.name)}.`);
      });
      const row = h('tr', { class: 'edit-row' }, h('td', { colspan: cols }, form));
      return row;
    };
    const columns = [
      { title: 'Name', cell: (k: KeyInfo) => h('div', null, h('strong', null, k.name), h('div', { class: 'muted small mono' }, k.id), k.label ? h('div', { class: 'muted small mono', title: 'the start of the secret' }, k.label) : null) },
      { title: 'Status', cell: (k: KeyInfo) => badge(status(k)) },
      { title: 'Spend', cell: (k: KeyInfo) => spend(k) },
      { title: 'Rate limits', cell: (k: KeyInfo) => h('span', { class: 'nowrap' }, rateText(k)) },
      { title: 'Models', className: 'col-models', cell: (k: KeyInfo) => modelsCell(k) },
      { title: 'Today', numeric: true, cell: (k: KeyInfo) => usd(k.usage_daily) },
      { title: 'This month', numeric: true, cell: (k: KeyInfo) => usd(k.usage_monthly) },
      { title: 'Total', numeric: true, cell: (k: KeyInfo) => usd(k.usage_total) },
      { title: 'Retention', cell: (k: KeyInfo) => retentionText(k.retention) },
      { title: 'Expires', cell: (k: KeyInfo) => (k.expires_at ? dateTime(k.expires_at) : 'never') },
      {
        title: 'Actions',
        cell: (k: KeyInfo) => {
          const del = h('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-action': 'delete' }, 'Delete');
          let armed = false;
          del.addEventListener('click', () => {
            if (!armed) {
              armed = true;
              del.textContent = 'Really delete?';
              setTimeout(() => {
                armed = false;
                del.textContent = 'Delete';
              }, 4000);
              return;
            }
            request('DELETE', `/v1/keys/${encodeURIComponent(k.id)}`)
              .then(() => {
                forgetKeys();
                replace(flash, notice(`Deleted ${k.name}.`, 'success'));
                return loadList();
              })
              .catch((err: unknown) => replace(flash, errorBox(err, `${k.name}:`)));
          });
          if (!canManage) return h('div', { class: 'row-actions' }, link(route('/usage', { key_id: k.id }), 'Usage'), link(route('/requests', { key_id: k.id }), 'Requests'));
          return h(
            'div',
            { class: 'row-actions' },
            h(
              'button',
              {
                type: 'button',
                class: 'btn btn-small',
                'data-action': 'edit',
                onclick: (ev: Event) => {
                  const tr = (ev.target as HTMLElement).closest('tr')!;
                  if (tr.nextElementSibling?.classList.contains('edit-row')) return tr.nextElementSibling.remove();
                  tr.after(editRow(k, columns.length));
                },
              },
              'Limits…',
            ),
            k.disabled
              ? h('button', { type: 'button', class: 'btn btn-small', 'data-action': 'enable', onclick: () => void patch(k, { disabled: false }, `Enabled ${k.name}.`) }, 'Enable')
              : h('button', { type: 'button', class: 'btn btn-small btn-warn', 'data-action': 'disable', onclick: () => void patch(k, { disabled: true }, `Disabled ${k.name}: requests with it are refused from now on.`) }, 'Disable'),
            link(route('/usage', { key_id: k.id }), 'Usage'),
            link(route('/requests', { key_id: k.id }), 'Requests'),
            del,
          );
        },
      },
    ];
    replace(listBox, h('h2', null, `Keys (${keys.length})`), table(columns, keys, { rowAttrs: (k) => ({ 'data-key-id': k.id, 'data-key-name': k.name, 'data-status': status(k) }) }));
  }

  await loadList();
  // Live: spend moves with traffic. Not while a key is being edited (that would drop the form).
  let last = JSON.stringify(await allKeys().catch(() => null));
  ctx.live(async () => {
    if (listBox.querySelector('.edit-row') || listBox.contains(document.activeElement)) return;
    forgetKeys();
    const text = JSON.stringify(await allKeys());
    if (text === last) return;
    last = text;
    await loadList();
  });
}

/** The new key's secret, once, with a copy button. It is never fetched again. */
function showSecret(slot: HTMLElement, key: KeyInfo, secret: string): void {
  const value = h('input', { class: 'secret-value mono', id: 'new-secret', readonly: true, value: secret, 'aria-label': 'New key', spellcheck: 'false' });
  const copy = h('button', { type: 'button', class: 'btn btn-primary', id: 'copy-secret' }, 'Copy');
  copy.addEventListener('click', () => {
    value.select();
    void copyText(secret).then((ok) => {
      copy.textContent = ok ? 'Copied' : 'Select and copy it by hand';
    });
  });
  replace(
    slot,
    h(
      'section',
      { class: 'card secret', role: 'alert' },
      h('h2', null, `Key "${key.name}" created`),
      h('p', null, h('strong', null, 'Copy it now: '), 'this is the only time the key is shown. Only its hash is stored, so it cannot be displayed again.'),
      h('div', { class: 'secret-row' }, value, copy),
      h('button', { type: 'button', class: 'btn btn-ghost', id: 'dismiss-secret', onclick: () => replace(slot) }, 'I have saved it'),
    ),
  );
  value.focus();
  value.select();
}
