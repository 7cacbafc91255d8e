// Catalog (admin key): the providers and models in force, where each comes from (the config
// file, read-only; or the database), and a form that puts or removes a stored entry through
// /v1/catalog (docs/catalog.md). Secrets are write-only: shown as [redacted], kept when left out.
import { get, request } from '../api';
import { field, h, labelled, replace, select } from '../dom';
import { dateTime } from '../format';
import { badge, empty, errorBox, isAdmin, notice, pageHeader, table, type PageContext } from '../ui';

type Loose = Record<string, unknown>;

interface CatalogEntry {
  kind: 'provider' | 'model';
  id: string;
  source: 'file' | 'database';
  entry: Loose;
  updated_at?: string;
  updated_by?: string | null;
  shadowed?: true;
}

interface CatalogAnswer {
  revision: number;
  providers: CatalogEntry[];
  models: CatalogEntry[];
}

const REDACTED = '[redacted]';

/** The entry as the form shows it for a change: without its id and without redacted secrets (left out = kept). */
function editable(entry: Loose): Loose {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v as Loose).filter(([, x]) => x !== REDACTED).map(([k, x]) => [k, strip(x)]));
    return v;
  };
  const { id: _id, ...rest } = strip(entry) as Loose;
  return rest;
}

const entryPath = (kind: string, id: string) => (kind === 'provider' ? `/v1/catalog/providers/${encodeURIComponent(id)}` : `/v1/catalog/models/${id.split('/').map(encodeURIComponent).join('/')}`);

const sourceBadge = (e: CatalogEntry) => (e.shadowed ? badge('shadowed by the file', 'warn') : e.source === 'file' ? badge('config file', 'muted') : badge('database', 'ok'));

export async function catalogPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  if (!isAdmin(ctx.me)) {
    replace(root, pageHeader('Catalog'), notice('The catalog is managed with the admin key.', 'warn'));
    return;
  }
  const status = h('div', { 'data-catalog-status': '' });
  const kind = select('kind', [['model', 'Model'], ['provider', 'Provider']], 'model');
  const id = h('input', { name: 'id', required: true, placeholder: 'team/my-model', autocomplete: 'off', spellcheck: 'false' });
  const body = h('textarea', { name: 'entry', rows: 12, class: 'mono', spellcheck: 'false', placeholder: '{"context_length": 8192, "endpoints": [{"provider": "…", "upstream_model": "…"}]}' });
  const lists = h('div', null);

  const fill = (e: CatalogEntry) => {
    kind.value = e.kind;
    id.value = e.id;
    body.value = JSON.stringify(editable(e.entry), null, 2);
    id.focus();
  };
  const remove = async (e: CatalogEntry) => {
    if (!confirm(`Remove the stored ${e.kind} ${e.id}?`)) return;
    try {
      await request('DELETE', entryPath(e.kind, e.id));
      replace(status, notice(`Removed ${e.kind} ${e.id}.`, 'success'));
      await load();
    } catch (err) {
      replace(status, errorBox(err, `Could not remove ${e.id}:`));
    }
  };
  const actions = (e: CatalogEntry) =>
    e.source === 'file'
      ? h('span', { class: 'muted small' }, 'read-only')
      : h('span', { class: 'nowrap' }, h('button', { type: 'button', class: 'btn btn-small', 'data-edit': e.id, onclick: () => fill(e) }, 'Edit'), ' ', h('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-remove': e.id, onclick: () => void remove(e) }, 'Remove'));
  const updated = (e: CatalogEntry) => (e.updated_at ? h('span', { class: 'small muted' }, `${dateTime(e.updated_at)} by ${e.updated_by ?? '—'}`) : '—');

  async function load(): Promise<void> {
    let c: CatalogAnswer;
    try {
      c = await get<CatalogAnswer>('/v1/catalog');
    } catch (err) {
      replace(lists, errorBox(err));
      return;
    }
    replace(
      lists,
      h(
        'section',
        { class: 'card' },
        h('h2', null, `Providers (${c.providers.length})`),
        c.providers.length
          ? table<CatalogEntry>(
              [
                { title: 'Provider', className: 'mono', cell: (e) => e.id },
                { title: 'Kind', cell: (e) => String(e.entry.kind ?? '—') },
                { title: 'Base URL', className: 'mono small', cell: (e) => String(e.entry.base_url ?? 'the kind\'s default') },
                { title: 'Source', cell: sourceBadge },
                { title: 'Changed', cell: updated },
                { title: '', cell: actions },
              ],
              c.providers,
              { rowAttrs: (e) => ({ 'data-provider': e.id, 'data-source': e.source }) },
            )
          : empty('No providers.'),
      ),
      h(
        'section',
        { class: 'card' },
        h('h2', null, `Models (${c.models.length})`),
        c.models.length
          ? table<CatalogEntry>(
              [
                { title: 'Model', className: 'mono', cell: (e) => e.id },
                { title: 'Endpoints', className: 'small', cell: (e) => ((e.entry.endpoints as Loose[] | undefined) ?? []).map((x) => `${String(x.provider)} → ${String(x.upstream_model)}`).join(', ') },
                { title: 'Source', cell: sourceBadge },
                { title: 'Changed', cell: updated },
                { title: '', cell: actions },
              ],
              c.models,
              { rowAttrs: (e) => ({ 'data-model': e.id, 'data-source': e.source }) },
            )
          : empty('No models.'),
      ),
      h('p', { class: 'hint' }, `Revision ${c.revision}. Entries of the config file are read-only here; change them in the file and reload.`),
    );
  }

  const form = h(
    'form',
    {
      class: 'form',
      'data-catalog-form': '',
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        const f = ev.currentTarget as HTMLFormElement;
        let entry: unknown;
        try {
          entry = JSON.parse(field(f, 'entry') || '{}');
        } catch (err) {
          replace(status, errorBox(err, 'The entry is not valid JSON:'));
          return;
        }
        const k = field(f, 'kind');
        const name = field(f, 'id');
        try {
          const r = await request<{ revision: number }>('PUT', entryPath(k, name), { body: entry });
          replace(status, notice(`Saved ${k} ${name} (revision ${r.revision}); it is in force on every replica within a second.`, 'success'));
          await load();
        } catch (err) {
          replace(status, errorBox(err, `Could not save ${name}:`));
        }
      },
    },
    labelled('Kind', kind),
    labelled('Id', id, 'A model is author/slug; a provider a slug. An id of the config file cannot be used.'),
    labelled('Entry (JSON, as in the config file)', body, 'Secrets (api_key, headers) are stored encrypted and never shown again: leave them out to keep them, set null to remove.'),
    h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save'),
  );

  replace(root, pageHeader('Catalog', 'Providers and models in force: the config file\'s and those stored through the API.'), status, lists, h('section', { class: 'card' }, h('h2', null, 'Add or change a stored entry'), form));
  await load();
}
