// One generation: what was asked and served, the routing decision and every attempt, tokens,
// cost, latency, time to first token, and the stored text where it was retained. All text is
// set as text (never parsed as HTML).
import { get, type Attempt, type Generation, type MessagePart, type StoredMessage } from '../api';
import { copyText, h, pre, replace, type Child } from '../dom';
import { dateTime, int, ms, usd, usdRounded } from '../format';
import { keyNames } from '../shared';
import { badge, empty, errorBox, facts, isAdmin, link, loading, pageHeader, route, stat, table, type PageContext } from '../ui';

const keyName = (id: string | null, names: Map<string, string>): string => (id === null ? 'admin key' : (names.get(id) ?? id));

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** A message's content as text: strings as they are, parts one after another. */
function contentText(content: StoredMessage['content']): Child {
  if (content === null || content === undefined) return h('span', { class: 'muted' }, '(no content)');
  if (typeof content === 'string') return pre(content);
  return content.map((part: MessagePart) => {
    if (part.type === 'text' && typeof part.text === 'string') return pre(part.text);
    if (part.type === 'image_url') {
      const url = typeof part.image_url === 'string' ? part.image_url : part.image_url?.url;
      const shown = typeof url === 'string' && url.startsWith('data:') ? `${url.slice(0, 40)}… (${int(url.length)} characters)` : String(url);
      return h('div', { class: 'part' }, h('span', { class: 'part-kind' }, 'image'), ' ', h('code', null, shown));
    }
    return h('div', { class: 'part' }, h('span', { class: 'part-kind' }, part.type), pre(json(part)));
  });
}

function message(m: StoredMessage, i: number): HTMLElement {
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) if (!['role', 'content'].includes(k) && v !== undefined) extra[k] = v;
  return h(
    'div',
    { class: `message role-${/^[a-z]+$/.test(m.role) ? m.role : 'other'}`, 'data-message': i },
    h('div', { class: 'message-role' }, m.role, m.name ? h('span', { class: 'muted' }, ` (${m.name})`) : null),
    contentText(m.content),
    Object.keys(extra).length ? h('details', null, h('summary', null, Object.keys(extra).join(', ')), pre(json(extra))) : null,
  );
}

function storedText(g: Generation): HTMLElement {
  const section = h('section', { class: 'card', id: 'stored-text' }, h('h2', null, 'Text'));
  const c = g.content;
  if (!c) {
    section.append(
      empty(
        g.retention === 'none'
          ? 'Not stored: this request ran with retention "none", so only its metadata was kept. Send op.retention (days) or set the key\'s retention to keep the text.'
          : 'The text is no longer stored (its retention has passed).',
      ),
    );
    return section;
  }
  section.append(h('p', { class: 'hint' }, `Kept for ${g.retention} day${g.retention === 1 ? '' : 's'} after the request.`));
  const req = c.request ?? {};
  section.append(h('h3', null, 'Request'));
  if (Array.isArray(req.messages)) section.append(h('div', { class: 'messages', id: 'request-messages' }, req.messages.map(message)));
  else if (req.prompt !== undefined) section.append(h('div', { class: 'messages', id: 'request-prompt' }, (Array.isArray(req.prompt) ? req.prompt : [req.prompt]).map((p) => pre(String(p)))));
  else section.append(empty('No request text.'));
  const out = c.output ?? {};
  section.append(h('h3', null, 'Response'));
  if (out.reasoning) section.append(h('details', { class: 'reasoning' }, h('summary', null, 'Reasoning'), pre(out.reasoning)));
  section.append(h('div', { class: 'messages', id: 'response-text' }, h('div', { class: 'message role-assistant' }, h('div', { class: 'message-role' }, 'assistant'), out.content ? pre(out.content) : h('span', { class: 'muted' }, '(no text)'))));
  if (out.tool_calls !== undefined && out.tool_calls !== null) section.append(h('h3', null, 'Tool calls'), pre(json(out.tool_calls), 'text code'));
  return section;
}

function routing(g: Generation): HTMLElement {
  const attempts: Attempt[] = g.provider_responses ?? [];
  const served = attempts.length ? attempts[attempts.length - 1] : undefined;
  const summary =
    attempts.length === 0
      ? 'No endpoint was tried (the request was refused before routing).'
      : g.status === 'success'
        ? `Served by ${g.endpoint ?? served?.endpoint ?? '?'} on attempt ${attempts.length} of ${attempts.length}${attempts.length > 1 ? `, after ${attempts.length - 1} failover${attempts.length > 2 ? 's' : ''}` : ''}.`
        : `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}; none succeeded.`;
  return h(
    'section',
    { class: 'card', id: 'routing' },
    h('h2', null, 'Routing'),
    h('p', { class: 'routing-summary' }, summary, served ? [' Routing reason: ', h('code', null, served.reason), '.'] : null),
    attempts.length
      ? table<Attempt & { n: number }>(
          [
            { title: '#', numeric: true, cell: (a) => a.n },
            { title: 'Endpoint', className: 'mono', cell: (a) => a.endpoint },
            { title: 'Provider', cell: (a) => a.provider },
            ...(attempts.some((a) => a.credential !== undefined) ? [{ title: 'Key', className: 'mono', cell: (a: Attempt) => a.credential ?? '' }] : []),
            { title: 'Model', cell: (a) => a.model },
            { title: 'Reason', cell: (a) => h('code', null, a.reason) },
            { title: 'HTTP', numeric: true, cell: (a) => (a.status === null ? 'no answer' : String(a.status)) },
            { title: 'Result', cell: (a) => (a.error_code ? badge(a.error_code, 'bad') : badge('ok', 'ok')) },
            { title: 'Time', numeric: true, cell: (a) => ms(a.latency_ms) },
          ],
          attempts.map((a, i) => ({ ...a, n: i + 1 })),
          { rowAttrs: (a) => ({ 'data-attempt': String(a.n) }) },
        )
      : null,
    g.dropped_parameters?.length ? h('p', { class: 'hint' }, 'Parameters the serving endpoint does not support, not sent upstream: ', g.dropped_parameters.map((d, i) => [i ? ', ' : '', h('code', null, d)])) : null,
  );
}

export async function generationPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.rest[0] ?? '';
  replace(root, pageHeader('Generation', id), loading());
  let g: Generation;
  let names: Map<string, string>;
  try {
    [g, names] = await Promise.all([get<{ data: Generation }>('/v1/generation', { id }).then((r) => r.data), keyNames(ctx.me)]);
  } catch (err) {
    replace(root, pageHeader('Generation', id, link('/requests', '← Requests')), errorBox(err));
    return;
  }
  const copy = h('button', { type: 'button', class: 'btn btn-small', title: 'Copy the id' }, 'Copy id');
  copy.addEventListener('click', () => {
    void copyText(g.id).then((ok) => {
      copy.textContent = ok ? 'Copied' : 'Copy failed';
      setTimeout(() => (copy.textContent = 'Copy id'), 1500);
    });
  });
  const throughput = g.tokens_completion && g.latency !== null && g.latency > (g.time_to_first_token ?? 0) ? (g.tokens_completion * 1000) / (g.latency - (g.time_to_first_token ?? 0)) : null;

  replace(
    root,
    pageHeader('Generation', h('span', { class: 'mono', id: 'generation-id' }, g.id), copy, link('/requests', '← Requests')),
    h(
      'div',
      { class: 'stats' },
      stat('status', 'Status', g.status, g.error_code ?? g.finish_reason ?? null),
      stat('cost', 'Cost', usdRounded(g.total_cost_usd ?? String(g.total_cost)), g.usage_source === 'estimated' ? 'tokens estimated by the gateway' : null, `exactly ${usd(g.total_cost_usd ?? g.total_cost)}`),
      stat('tokens', 'Tokens', `${int(g.tokens_prompt ?? 0)} → ${int(g.tokens_completion ?? 0)}`, `prompt → completion${g.native_tokens_reasoning ? ` · ${int(g.native_tokens_reasoning)} reasoning` : ''}${g.native_tokens_cached ? ` · ${int(g.native_tokens_cached)} cached` : ''}`),
      stat('latency', 'Latency', ms(g.latency), throughput ? `${throughput.toFixed(1)} tokens/s` : null),
      stat('ttft', 'Time to first token', ms(g.time_to_first_token), g.streamed ? 'streamed' : 'not streamed'),
    ),
    h(
      'section',
      { class: 'card', id: 'details' },
      h('h2', null, 'Details'),
      facts([
        ['Created', dateTime(g.created_at)],
        ['Status', h('span', null, badge(g.status), g.http_status ? ` HTTP ${g.http_status}` : '')],
        g.error_code ? ['Error', h('span', null, h('code', null, g.error_code), g.error_message ? ` ${g.error_message}` : '')] : null,
        ['Model', g.requested_model === g.model ? g.model : `${g.model} (requested ${g.requested_model})`],
        ['Provider', g.provider_name],
        ['Endpoint', g.endpoint ? h('code', null, g.endpoint) : null],
        ['Upstream model', g.upstream_model],
        ['Finish reason', g.finish_reason ? `${g.finish_reason}${g.native_finish_reason && g.native_finish_reason !== g.finish_reason ? ` (upstream: ${g.native_finish_reason})` : ''}` : null],
        ['Prompt tokens', int(g.tokens_prompt)],
        ['Completion tokens', int(g.tokens_completion)],
        g.native_tokens_reasoning ? ['Reasoning tokens', int(g.native_tokens_reasoning)] : null,
        g.native_tokens_cached ? ['Cached tokens', int(g.native_tokens_cached)] : null,
        ['Usage from', g.usage_source === 'estimated' ? 'estimated by the gateway' : g.usage_source],
        ['Cost', h('span', { id: 'exact-cost' }, usd(g.total_cost_usd ?? g.total_cost))],
        ['API', `${g.api_type}${g.streamed ? ', streamed' : ''}${g.cancelled ? ', cancelled by the client' : ''}`],
        ['Key', isAdmin(ctx.me) ? link(route('/requests', { key_id: g.api_key_id ?? 'admin' }), keyName(g.api_key_id, names)) : keyName(g.api_key_id, names)],
        ['Tags', g.tags.length ? h('span', { class: 'tags' }, g.tags.map((t) => link(route('/requests', { tag: t }), h('span', { class: 'tag' }, t)))) : null],
        ['Session', g.session_id ? link(route('/requests', { session: g.session_id }), g.session_id) : null],
        ['Retention', g.retention === 'none' ? 'none (text not stored)' : `${g.retention} days`],
        ['Request id', h('code', null, g.request_id)],
      ]),
    ),
    routing(g),
    storedText(g),
  );
}
