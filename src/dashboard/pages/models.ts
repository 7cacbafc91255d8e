// Models: the catalog, and each model's endpoints with pricing and live health.
import { get, type Endpoint, type Model, type ModelEndpoints } from '../api';
import { h, replace } from '../dom';
import { dateTime, int, ms, perMillion, pct } from '../format';
import { catalog } from '../shared';
import { badge, empty, errorBox, facts, link, loading, pageHeader, route, table, type PageContext } from '../ui';

const modelRoute = (id: string) => `/models/${id.split('/').map(encodeURIComponent).join('/')}`;

export async function modelsPage(root: HTMLElement, _ctx: PageContext): Promise<void> {
  replace(root, pageHeader('Models', 'The catalog this gateway serves. Prices are per million tokens, of the cheapest endpoint.'), loading());
  let models: Model[];
  try {
    models = await catalog();
  } catch (err) {
    replace(root, pageHeader('Models'), errorBox(err));
    return;
  }
  const list = models.length
    ? table<Model>(
        [
          { title: 'Model', cell: (m) => h('div', null, link(modelRoute(m.id), m.name), h('div', { class: 'muted small mono' }, m.id)) },
          { title: 'Context', numeric: true, cell: (m) => int(m.context_length) },
          { title: 'Max output', numeric: true, cell: (m) => int(m.top_provider?.max_completion_tokens ?? null) },
          { title: 'Prompt', numeric: true, cell: (m) => perMillion(m.pricing.prompt) },
          { title: 'Completion', numeric: true, cell: (m) => perMillion(m.pricing.completion) },
          { title: 'Modality', cell: (m) => m.architecture?.modality ?? '—' },
          { title: 'Parameters', cell: (m) => h('span', { class: 'small muted' }, m.supported_parameters.join(', ')) },
          { title: '', className: 'nowrap', cell: (m) => link(modelRoute(m.id), 'Endpoints →') },
        ],
        models,
        { rowAttrs: (m) => ({ 'data-model': m.id }) },
      )
    : empty('No models are configured. Add providers and models to the config file (see examples/opinference.yaml) and reload.');
  replace(root, pageHeader('Models', `${models.length} model${models.length === 1 ? '' : 's'} in the catalog. Prices are per million tokens, of the cheapest endpoint.`), h('section', { class: 'card' }, list));
}

/** Circuit state and cooldown as a word people read. */
function health(e: Endpoint): { word: string; title: string } {
  if (e.cooldown_until && Date.parse(e.cooldown_until) > Date.now()) return { word: 'cooling', title: `${e.cooldown_reason === 'rate_limit' ? 'rate limited' : 'failed and asked for a pause (Retry-After)'}: not tried until ${dateTime(e.cooldown_until)}` };
  if (e.circuit === 'open') return { word: 'down', title: 'circuit open after repeated failures; a probe request will test it again' };
  if (e.circuit === 'half-open') return { word: 'probing', title: 'circuit half-open: a probe request is testing it' };
  return { word: 'healthy', title: 'circuit closed: taking requests' };
}

export async function modelPage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const id = ctx.rest.join('/');
  replace(root, pageHeader(id), loading());
  let m: ModelEndpoints;
  let info: Model | undefined;
  try {
    [m, info] = await Promise.all([
      get<{ data: ModelEndpoints }>(`/v1/models/${ctx.rest.map(encodeURIComponent).join('/')}/endpoints`).then((r) => r.data),
      catalog().then((all) => all.find((x) => x.id === id)),
    ]);
  } catch (err) {
    replace(root, pageHeader(id, null, link('/models', '← Models')), errorBox(err));
    return;
  }
  const endpointsOf = (m: ModelEndpoints) =>
    table<Endpoint>(
    [
      { title: 'Provider', cell: (e) => h('div', null, h('strong', null, e.provider_name), h('div', { class: 'muted small' }, e.provider_kind)) },
      { title: 'Upstream model', className: 'mono', cell: (e) => e.upstream_model },
      {
        title: 'Health',
        cell: (e) => {
          const s = health(e);
          return h('span', { title: s.title }, badge(s.word));
        },
      },
      { title: 'Uptime 5 / 30 min', numeric: true, cell: (e) => `${pct(e.uptime_last_5m)} / ${pct(e.uptime_last_30m)}` },
      { title: 'TTFT p50', numeric: true, cell: (e) => ms(e.latency_last_30m?.p50) },
      { title: 'Throughput p50', numeric: true, cell: (e) => (e.throughput_last_30m ? `${e.throughput_last_30m.p50.toFixed(1)} tok/s` : '—') },
      { title: 'Attempts 30 min', numeric: true, cell: (e) => int(e.requests_last_30m) },
      { title: 'Price in / out', numeric: true, cell: (e) => `${perMillion(e.pricing.prompt)} / ${perMillion(e.pricing.completion)}` },
      { title: 'Context / max out', numeric: true, cell: (e) => `${int(e.context_length)} / ${int(e.max_completion_tokens)}` },
      { title: 'Quantization', cell: (e) => e.quantization },
    ],
    m.endpoints,
    { rowAttrs: (e) => ({ 'data-endpoint': e.tag }) },
  );
  let endpoints = endpointsOf(m);
  // Live: health, uptime and latency move with traffic.
  const url = `/v1/models/${ctx.rest.map(encodeURIComponent).join('/')}/endpoints`;
  let last = JSON.stringify(m.endpoints);
  ctx.live(async () => {
    const next = (await get<{ data: ModelEndpoints }>(url)).data;
    const text = JSON.stringify(next.endpoints);
    if (text === last) return;
    last = text;
    const table = endpointsOf(next);
    endpoints.replaceWith(table);
    endpoints = table;
  });
  replace(
    root,
    pageHeader(m.name, h('span', { class: 'mono' }, m.id), link(route('/requests', { model: m.id }), 'Requests'), link(route('/usage', { model: m.id }), 'Usage'), link('/models', '← Models')),
    m.description ? h('p', { class: 'description' }, m.description) : null,
    h(
      'section',
      { class: 'card', id: 'endpoints' },
      h('h2', null, `Endpoints (${m.endpoints.length})`),
      endpoints,
      h('p', { class: 'hint' }, 'Health is live from this gateway process: uptime is the share of successful attempts (rate limits excluded), TTFT the time to first token, throughput output tokens per second, all over the last 30 minutes. Prices are per million tokens.'),
    ),
    info
      ? h(
          'section',
          { class: 'card' },
          h('h2', null, 'Catalog entry'),
          facts([
            ['Context length', int(info.context_length)],
            ['Tokenizer', info.architecture?.tokenizer ?? null],
            ['Modality', info.architecture?.modality ?? null],
            ['Parameters', info.supported_parameters.join(', ')],
          ]),
        )
      : null,
  );
}
