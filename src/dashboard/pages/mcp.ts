// MCP: the tool servers of this key's view with their health and tools, calls by tool and by key, and recent errors.
import { get, type McpCall, type McpCallGroup, type McpServer } from '../api';
import { h, replace } from '../dom';
import { dateTime, int, ms } from '../format';
import { badge, empty, errorBox, isAdmin, loading, pageHeader, table, type PageContext } from '../ui';

const HINT = 'Calls over the last 24 hours, from the tool-call records. Health is asked when the page opens: a server is healthy when it listed its tools.';

interface McpData {
  servers: McpServer[];
  byTool: McpCallGroup[];
  byKey: McpCallGroup[] | null;
  failures: McpCall[];
}

/** The page's data; `servers` given: the servers are not asked again (live updates refresh the calls only). */
async function load(admin: boolean, known?: McpServer[]): Promise<McpData> {
  const [servers, byTool, byKey, errors, refused] = await Promise.all([
    known ? Promise.resolve(known) : get<{ data: McpServer[] }>('/v1/mcp/servers').then((r) => r.data),
    get<{ data: McpCallGroup[] }>('/v1/mcp/calls/summary').then((r) => r.data),
    admin ? get<{ data: McpCallGroup[] }>('/v1/mcp/calls/summary', { by_key: 'true' }).then((r) => r.data) : Promise.resolve(null),
    get<{ data: McpCall[] }>('/v1/mcp/calls', { status: 'error', limit: 20 }).then((r) => r.data),
    get<{ data: McpCall[] }>('/v1/mcp/calls', { status: 'refused', limit: 20 }).then((r) => r.data),
  ]);
  const failures = [...errors, ...refused].sort((a, b) => (a.created_at < b.created_at ? 1 : -1)).slice(0, 20);
  return { servers, byTool, byKey, failures };
}

/** Calls per key, summed over servers and tools. */
function perKey(groups: readonly McpCallGroup[]): McpCallGroup[] {
  const byKey = new Map<string, McpCallGroup>();
  for (const g of groups) {
    const k = g.key_id ?? 'admin';
    const sum = byKey.get(k) ?? { server: '', tool: '', key_id: k, calls: 0, ok: 0, tool_errors: 0, errors: 0, refused: 0, p50_latency_ms: 0, p95_latency_ms: 0 };
    sum.calls += g.calls;
    sum.ok += g.ok;
    sum.tool_errors += g.tool_errors;
    sum.errors += g.errors;
    sum.refused += g.refused;
    byKey.set(k, sum);
  }
  return [...byKey.values()].sort((a, b) => b.calls - a.calls);
}

function render(data: McpData, admin: boolean): HTMLElement[] {
  const calls = new Map<string, { calls: number; errors: number }>();
  for (const g of data.byTool) {
    const c = calls.get(g.server) ?? { calls: 0, errors: 0 };
    c.calls += g.calls;
    c.errors += g.errors;
    calls.set(g.server, c);
  }
  const servers = data.servers.length
    ? table<McpServer>(
        [
          { title: 'Server', className: 'mono', cell: (s) => s.id },
          { title: 'Transport', className: 'nowrap', cell: (s) => s.transport },
          { title: 'Health', cell: (s) => h('span', { title: s.error ?? `listed its tools in ${s.latency_ms} ms` }, badge(s.error === null ? 'healthy' : 'down')) },
          { title: 'Tools', numeric: true, cell: (s) => (s.tools === null ? '—' : int(s.tools.length)) },
          { title: 'Calls 24 h', numeric: true, cell: (s) => int(calls.get(s.id)?.calls ?? 0) },
          { title: 'Errors 24 h', numeric: true, cell: (s) => int(calls.get(s.id)?.errors ?? 0) },
          { title: 'Tool names', cell: (s) => h('span', { class: 'small muted' }, s.tools === null ? (s.error ?? '') : s.tools.join(', ')) },
        ],
        data.servers,
        { rowAttrs: (s) => ({ 'data-mcp-server': s.id }) },
      )
    : empty('No MCP server is configured for this key (mcp_servers in the config file, allowed_tools of the key).');
  const byTool = data.byTool.length
    ? table<McpCallGroup>(
        [
          { title: 'Server', className: 'mono', cell: (g) => g.server || '—' },
          { title: 'Tool', className: 'mono', cell: (g) => g.tool },
          { title: 'Calls', numeric: true, cell: (g) => int(g.calls) },
          { title: 'OK', numeric: true, cell: (g) => int(g.ok) },
          { title: 'Tool errors', numeric: true, cell: (g) => int(g.tool_errors) },
          { title: 'Errors', numeric: true, cell: (g) => int(g.errors) },
          { title: 'Refused', numeric: true, cell: (g) => int(g.refused) },
          { title: 'p50 / p95', numeric: true, cell: (g) => `${ms(g.p50_latency_ms)} / ${ms(g.p95_latency_ms)}` },
        ],
        data.byTool,
        { rowAttrs: (g) => ({ 'data-mcp-tool': `${g.server}__${g.tool}` }) },
      )
    : empty('No tool calls in the last 24 hours.');
  const byKey = data.byKey === null
    ? null
    : h(
        'section',
        { class: 'card', id: 'mcp-keys' },
        h('h2', null, 'Calls by key'),
        data.byKey.length
          ? table<McpCallGroup>(
              [
                { title: 'Key', className: 'mono', cell: (g) => g.key_id ?? 'admin' },
                { title: 'Calls', numeric: true, cell: (g) => int(g.calls) },
                { title: 'OK', numeric: true, cell: (g) => int(g.ok) },
                { title: 'Tool errors', numeric: true, cell: (g) => int(g.tool_errors) },
                { title: 'Errors', numeric: true, cell: (g) => int(g.errors) },
                { title: 'Refused', numeric: true, cell: (g) => int(g.refused) },
              ],
              perKey(data.byKey),
              { rowAttrs: (g) => ({ 'data-mcp-key': g.key_id ?? 'admin' }) },
            )
          : empty('No tool calls in the last 24 hours.'),
      );
  const failures = data.failures.length
    ? table<McpCall>(
        [
          { title: 'Time', className: 'nowrap', cell: (c) => dateTime(c.created_at) },
          ...(admin ? [{ title: 'Key', className: 'mono', cell: (c: McpCall) => c.key_id }] : []),
          { title: 'Tool', className: 'mono', cell: (c) => (c.server ? `${c.server}__${c.tool}` : c.tool) },
          { title: 'Status', cell: (c) => badge(c.status, c.status === 'refused' ? 'refused' : 'bad') },
          { title: 'Code', className: 'mono', cell: (c) => c.error?.code ?? '—' },
          { title: 'Message', cell: (c) => h('span', { class: 'small' }, c.error?.message ?? '') },
        ],
        data.failures,
        { rowAttrs: (c) => ({ 'data-mcp-call': c.id }) },
      )
    : empty('No failed or refused tool calls.');
  return [
    h('section', { class: 'card', id: 'mcp-servers' }, h('h2', null, `Servers (${data.servers.length})`), servers),
    h('section', { class: 'card', id: 'mcp-tools' }, h('h2', null, 'Calls by tool'), byTool),
    ...(byKey ? [byKey] : []),
    h('section', { class: 'card', id: 'mcp-errors' }, h('h2', null, 'Recent errors and refusals'), failures),
  ];
}

export async function mcpPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const admin = isAdmin(ctx.me);
  replace(root, pageHeader('MCP', HINT), loading());
  let data: McpData;
  try {
    data = await load(admin);
  } catch (err) {
    replace(root, pageHeader('MCP'), errorBox(err));
    return;
  }
  const body = h('div', { id: 'mcp-body' }, render(data, admin));
  // Live: the call tables move with traffic; health is asked when the page is opened (each ask opens a session to every server).
  let last = JSON.stringify(data);
  ctx.live(async () => {
    const next = await load(admin, data.servers);
    const text = JSON.stringify(next);
    if (text === last) return;
    last = text;
    replace(body, ...render(next, admin));
  });
  replace(root, pageHeader('MCP', HINT), body);
}
