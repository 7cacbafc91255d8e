// Audit: who changed what (GET /v1/audit, newest first, filtered by action), and the alert
// deliveries (GET /v1/alerts/deliveries). Admin key only.
import { get } from '../api';
import { h, replace } from '../dom';
import { dateTime, int } from '../format';
import { badge, empty, errorBox, link, loading, pageHeader, route, table, type PageContext } from '../ui';

/** A row of `GET /v1/audit` (restated from src/store/audit-log.ts). */
interface AuditRow {
  id: string;
  created_at: string;
  actor: { type: string; id: string };
  action: string;
  target: { type: string; id: string | null };
  before: unknown;
  after: unknown;
  request_id: string | null;
  source_ip: string | null;
}

/** A row of `GET /v1/alerts/deliveries` (restated from src/store/alerts.ts). */
interface DeliveryRow {
  id: string;
  webhook_id: string;
  status: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  created_at: string;
  event: { type: string; data: Record<string, unknown> };
}

/** The fields a change changed: `name: a → b`, one per line (JSON values, shown as text). */
function changes(before: unknown, after: unknown): string {
  const b = (before ?? {}) as Record<string, unknown>;
  const a = (after ?? {}) as Record<string, unknown>;
  if (before === null) return 'created';
  if (after === null) return 'deleted';
  const flat = (o: Record<string, unknown>, prefix = ''): Record<string, string> =>
    Object.fromEntries(Object.entries(o).flatMap(([k, v]) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.entries(flat(v as Record<string, unknown>, `${prefix}${k}.`)) : [[`${prefix}${k}`, JSON.stringify(v)]])));
  const fb = flat(b);
  const fa = flat(a);
  const keys = [...new Set([...Object.keys(fb), ...Object.keys(fa)])].filter((k) => fb[k] !== fa[k]);
  return keys.length ? keys.map((k) => `${k}: ${fb[k] ?? '—'} → ${fa[k] ?? '—'}`).join('\n') : 'no change';
}

export async function auditPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const action = ctx.params.get('action') ?? '';
  replace(root, pageHeader('Audit'), loading());
  let rows: AuditRow[];
  let deliveries: DeliveryRow[];
  try {
    [rows, deliveries] = await Promise.all([
      get<{ data: AuditRow[] }>('/v1/audit', { limit: 200, action: action || undefined }).then((r) => r.data),
      get<{ data: DeliveryRow[] }>('/v1/alerts/deliveries', { limit: 50 }).then((r) => r.data),
    ]);
  } catch (err) {
    replace(root, pageHeader('Audit'), errorBox(err));
    return;
  }
  const filters = h('p', { class: 'small' }, 'Show: ', ...['', 'key.', 'team.', 'alert_webhook.', 'config.'].flatMap((a) => [link(route('/audit', { action: a || undefined }), a ? a.slice(0, -1) : 'everything'), ' ']));
  const log = rows.length
    ? table<AuditRow>(
        [
          { title: 'When', className: 'nowrap', cell: (r) => dateTime(r.created_at) },
          { title: 'Who', cell: (r) => h('div', null, h('span', { class: 'mono' }, r.actor.id), h('div', { class: 'muted small' }, r.actor.type, r.source_ip ? ` · ${r.source_ip}` : '')) },
          { title: 'Action', cell: (r) => badge(r.action) },
          { title: 'Target', className: 'mono small', cell: (r) => `${r.target.type} ${r.target.id ?? ''}` },
          { title: 'Change', cell: (r) => h('pre', { class: 'small' }, changes(r.before, r.after)) },
        ],
        rows,
        { rowAttrs: (r) => ({ 'data-audit': r.id }) },
      )
    : empty('No change recorded yet: keys, teams and alert webhooks changed through the API or the CLI, and config reloads, appear here.');
  const sent = deliveries.length
    ? table<DeliveryRow>(
        [
          { title: 'When', className: 'nowrap', cell: (d) => dateTime(d.created_at) },
          { title: 'Event', cell: (d) => badge(d.event.type) },
          { title: 'Webhook', className: 'mono small', cell: (d) => d.webhook_id },
          { title: 'Status', cell: (d) => badge(d.status) },
          { title: 'Attempts', numeric: true, cell: (d) => int(d.attempts) },
          { title: 'Last answer', cell: (d) => h('span', { class: 'small' }, d.last_status === null ? (d.last_error ?? '—') : String(d.last_status)) },
        ],
        deliveries,
        { rowAttrs: (d) => ({ 'data-delivery': d.id }) },
      )
    : empty('No alert sent yet (configure alerts.webhooks or POST /v1/alerts/webhooks).');
  replace(
    root,
    pageHeader('Audit', 'Every change through the admin API, the CLI and config reloads, newest first; secrets are never recorded.'),
    h('section', { class: 'card', id: 'audit-log' }, h('h2', null, 'Changes'), filters, log),
    h('section', { class: 'card', id: 'alert-deliveries' }, h('h2', null, 'Alert deliveries'), sent),
  );
}
