import type { ChatRequest } from '../core/chat-types.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ResolvedEndpoint } from './resolved-endpoint.js';
import type { Catalog } from './catalog.js';
import { meetsPerformance, type Admission, type HealthRegistry } from './endpoint-health.js';
import { stickyKey } from './sticky-routes.js';
import { endpointPrice, filterEndpoint, requiredModalities, requiredParameters, type ExclusionReason, type FilterVerdict, type PromptTokens } from './filters.js';

/** Why an endpoint was left out of a plan. */
export interface Exclusion {
  endpoint: string;
  model: string;
  reason: ExclusionReason;
  detail: string;
}

/** One endpoint of a plan and why it stands where it stands. */
export interface PlannedEndpoint {
  target: ResolvedEndpoint;
  /** `provider.order`, `sort:price`, `weighted-random`, `recently-failing`, `fallback`, `models[1]` … */
  reason: string;
}

/** An ordered list of endpoints to try, and what was excluded on the way. */
export interface RoutePlan {
  endpoints: PlannedEndpoint[];
  excluded: Exclusion[];
}

/** What the router needs besides the request. */
export interface RouteContext {
  catalog: Catalog;
  health: HealthRegistry;
  /** Uniform [0, 1) source for the price-weighted choice (seedable in tests). */
  random: () => number;
}

/** Why health keeps an endpoint out, in words; "after a rate limit" only when one started it. */
function healthDetail(a: Exclude<Admission, { ok: true }>): string {
  if (a.reason === 'circuit_open') return 'circuit open after repeated failures';
  return a.cause === 'rate_limit' ? 'cooling down after a rate limit' : 'cooling down: the upstream failed and asked for a pause (Retry-After)';
}

/** Whether every price of the endpoint is zero. */
function isFree(t: ResolvedEndpoint): boolean {
  const p = t.endpoint.pricing;
  return Number(p.prompt) === 0 && Number(p.completion) === 0 && Number(p.request) === 0;
}

/** Order endpoints by a random draw without replacement, weighted by weight / price². */
function weightedShuffle(items: ResolvedEndpoint[], random: () => number): ResolvedEndpoint[] {
  const pool = items.map((t) => {
    const price = endpointPrice(t);
    return { t, w: t.endpoint.weight / Math.max(price, 1e-9) ** 2 };
  });
  const out: ResolvedEndpoint[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((s, x) => s + x.w, 0);
    let r = random() * total;
    let i = 0;
    for (; i < pool.length - 1; i++) {
      r -= pool[i]!.w;
      if (r < 0) break;
    }
    out.push(pool.splice(i, 1)[0]!.t);
  }
  return out;
}

function sortKey(t: ResolvedEndpoint, by: 'price' | 'throughput' | 'latency', health: HealthRegistry): number {
  switch (by) {
    case 'price':
      return endpointPrice(t);
    case 'throughput': {
      const p50 = health.stats(t.id).throughput_last_30m?.p50;
      return p50 === undefined ? Number.POSITIVE_INFINITY : -p50;
    }
    case 'latency':
      return health.stats(t.id).latency_last_30m?.p50 ?? Number.POSITIVE_INFINITY;
  }
}

/** Endpoints that miss `preferred_max_latency` / `preferred_min_throughput` go after the others (never out). */
function deprioritiseSlow(tail: PlannedEndpoint[], pref: NonNullable<ChatRequest['provider']>, health: HealthRegistry): PlannedEndpoint[] {
  const fast: PlannedEndpoint[] = [];
  const slow: PlannedEndpoint[] = [];
  for (const p of tail) {
    if (meetsPerformance(health.stats(p.target.id), pref.preferred_max_latency, pref.preferred_min_throughput)) fast.push(p);
    else slow.push({ ...p, reason: `${p.reason}:below-preferred-performance` });
  }
  return [...fast, ...slow];
}

/** The request as routing sees it for one model: its variant's preferences under the request's own. */
function forModel(req: ChatRequest, modelId: string): ChatRequest {
  const variant = req.variants?.[modelId];
  if (!variant) return req;
  return { ...req, model: modelId, provider: { ...variant.provider, ...(req.provider ?? {}) } };
}

/** The first input modality the messages use that a model does not take: `[modality, param]`. */
function missingModality(inputModalities: readonly string[], needs: ReadonlyMap<string, string>): [string, string] | undefined {
  return [...needs].find(([modality]) => !inputModalities.includes(modality));
}

/**
 * The static verdict on one endpoint for the request as routing sees it for its model
 * ({@link forModel}): `:free` first, then every filter of {@link filterEndpoint}. Health is not
 * looked at.
 */
function staticVerdict(target: ResolvedEndpoint, modelId: string, modelReq: ChatRequest, needs: readonly string[], prompt: PromptTokens): FilterVerdict | undefined {
  if (modelReq.variants?.[modelId]?.freeOnly === true && !isFree(target)) return { reason: 'max_price', detail: 'not priced at zero (:free)' };
  return filterEndpoint(target, modelReq, needs, prompt);
}

/**
 * The endpoint `endpointId` of model `modelId` when the router could put it in a plan for
 * `req` now, health aside; else undefined. It could when `modelId` is the request's `model` or
 * one of its `models` (as resolved and as admission left them: a key's `allowed_models` has
 * already removed the others), the catalog still lists that endpoint under that model, the
 * model takes every input modality the messages use, and the endpoint passes every static
 * filter {@link planRoute} applies (`provider` preferences with the model's variant, `:free`,
 * required parameters, output limit, context length). An open circuit or a cooldown does not
 * count: they say nothing about what the request may get. For the response cache: a stored
 * answer is served only from an endpoint the request could reach live.
 */
export function plannableEndpoint(req: ChatRequest, catalog: Catalog, modelId: string, endpointId: string, prompt: PromptTokens): ResolvedEndpoint | undefined {
  if (modelId !== req.model && !(req.models ?? []).includes(modelId)) return undefined;
  const entry = catalog.models.get(modelId);
  const target = entry?.endpoints.find((t) => t.id === endpointId);
  if (!entry || !target) return undefined;
  if (missingModality(entry.model.architecture.input_modalities, requiredModalities(req))) return undefined;
  return staticVerdict(target, modelId, forModel(req, modelId), requiredParameters(req), prompt) ? undefined : target;
}

/** Order the eligible endpoints of one model. */
function orderModel(eligible: ResolvedEndpoint[], req: ChatRequest, ctx: RouteContext): PlannedEndpoint[] {
  const pref = req.provider ?? {};
  let head: PlannedEndpoint[] = [];
  let rest = eligible;
  if (pref.order) {
    for (const slug of pref.order) {
      for (const t of rest.filter((x) => x.provider.id === slug || x.id === slug)) head.push({ target: t, reason: 'provider.order' });
      rest = rest.filter((x) => !head.some((h) => h.target === x));
    }
    if (pref.allow_fallbacks === false) return head;
  }
  let tail: PlannedEndpoint[];
  if (pref.sort) {
    const by = pref.sort;
    tail = [...rest].sort((a, b) => sortKey(a, by, ctx.health) - sortKey(b, by, ctx.health)).map((t) => ({ target: t, reason: `sort:${by}` }));
  } else {
    const healthy = rest.filter((t) => !ctx.health.recentlyFailing(t.id));
    const failing = rest.filter((t) => ctx.health.recentlyFailing(t.id));
    tail = [
      ...weightedShuffle(healthy, ctx.random).map((t) => ({ target: t, reason: 'weighted-random' })),
      ...failing.map((t) => ({ target: t, reason: 'recently-failing' })),
    ];
  }
  if (pref.preferred_max_latency || pref.preferred_min_throughput) tail = deprioritiseSlow(tail, pref, ctx.health);
  const key = !pref.order ? stickyKey(req) : undefined;
  const stuck = key === undefined || tail.length < 2 ? undefined : ctx.health.sticky.get(key, req.model);
  const at = stuck === undefined ? -1 : tail.findIndex((p) => p.target.id === stuck);
  if (at > 0) tail = [{ target: tail[at]!.target, reason: 'sticky' }, ...tail.slice(0, at), ...tail.slice(at + 1)];
  if (head.length > 0) tail = tail.map((p) => ({ ...p, reason: 'fallback' }));
  head = [...head, ...tail];
  if (pref.allow_fallbacks === false) head = head.slice(0, 1);
  return head;
}

/**
 * Turn a request into an ordered plan (SPEC §2.1, OpenRouter provider routing): for `model`
 * then each of `models`, the endpoints that pass every filter, ordered by `provider.order`,
 * `sort`, or a price-weighted random draw with recently failing endpoints last. Endpoints
 * whose circuit is open or that are cooling down (after a rate limit, or a failure sent with
 * `Retry-After`) are left out, and so are those whose provider lists `api_keys` that all cool
 * (provider-credentials.ts).
 * A model whose `architecture.input_modalities` lack a modality the messages use (an image,
 * audio or file part) is left out whole.
 * @throws GatewayError `no_providers_configured` (empty catalog), `unsupported_input_modality`
 *   (only input modalities excluded them; `param` names the first such part), `no_endpoint_available` (unknown
 *   model or every endpoint filtered out; the message lists why), `context_length_exceeded`
 *   (only the context window excluded them), `endpoints_unavailable` (only health excluded them).
 *   An endpoint whose `max_completion_tokens` is below the request's output limit is excluded
 *   unless its `output_limit` is `clamp` (then the attempt sends that cap).
 */
export function planRoute(req: ChatRequest, ctx: RouteContext, promptTokens: number | PromptTokens): RoutePlan {
  const prompt: PromptTokens = typeof promptTokens === 'number' ? { upperBound: promptTokens, estimate: () => promptTokens } : promptTokens;
  if (ctx.catalog.empty) {
    throw new GatewayError(
      'no_providers_configured',
      'no providers or models are configured: add a provider and a model to the config file (opinference.yaml, or the file OP_CONFIG names) and restart; see examples/opinference.yaml',
    );
  }
  const needs = requiredParameters(req);
  const modalities = requiredModalities(req);
  let modalityError: GatewayError | undefined;
  const plan: RoutePlan = { endpoints: [], excluded: [] };
  const unknown: string[] = [];
  let retryAfterMs = Number.POSITIVE_INFINITY;
  const models = [req.model, ...(req.models ?? [])];
  models.forEach((modelId, position) => {
    const entry = ctx.catalog.models.get(modelId);
    if (!entry) {
      unknown.push(modelId);
      return;
    }
    const eligible: ResolvedEndpoint[] = [];
    const missing = missingModality(entry.model.architecture.input_modalities, modalities);
    if (missing) {
      const accepted = entry.model.architecture.input_modalities as readonly string[];
      const [modality, param] = missing;
      const why = `model ${JSON.stringify(modelId)} does not take ${modality} input (its input_modalities: ${accepted.join(', ')})`;
      const detail = `${why}; ${param}`;
      modalityError ??= new GatewayError('unsupported_input_modality', `${param}: ${why}`, { param });
      for (const target of entry.endpoints) plan.excluded.push({ endpoint: target.id, model: modelId, reason: 'input_modality', detail });
      return;
    }
    const modelReq = forModel(req, modelId);
    for (const target of entry.endpoints) {
      if (plan.endpoints.some((p) => p.target === target)) continue;
      let verdict: { reason: ExclusionReason; detail: string } | undefined = staticVerdict(target, modelId, modelReq, needs, prompt);
      if (!verdict) {
        const admission = ctx.health.peek(target.id);
        if (!admission.ok) {
          retryAfterMs = Math.min(retryAfterMs, admission.retryAfterMs);
          verdict = { reason: admission.reason, detail: healthDetail(admission) };
        } else if (target.credentials !== undefined && !ctx.health.credentials.anyUsable(target.credentials)) {
          // Every key of the provider cools (rate limits, auth failures): the endpoint counts as cooling.
          retryAfterMs = Math.min(retryAfterMs, ctx.health.credentials.soonestUsableMs(target.credentials));
          verdict = { reason: 'cooldown', detail: `cooling down: every key of provider ${target.provider.id} is cooling after a rate limit or an auth failure` };
        }
      }
      if (verdict) plan.excluded.push({ endpoint: target.id, model: modelId, ...verdict });
      else eligible.push(target);
    }
    const ordered = orderModel(eligible, { ...modelReq, model: modelId }, ctx);
    plan.endpoints.push(...(position === 0 ? ordered : ordered.map((p) => ({ ...p, reason: `models[${position - 1}]:${p.reason}` }))));
  });
  const by = req.provider?.sort;
  if (by && req.provider?.sort_partition === 'none' && !req.provider.order) {
    plan.endpoints = plan.endpoints
      .map((p, i) => ({ p, i, k: sortKey(p.target, by, ctx.health) }))
      .sort((a, b) => a.k - b.k || a.i - b.i)
      .map(({ p }) => ({ ...p, reason: `sort:${by}:partition-none` }));
  }
  if (plan.endpoints.length > 0) return plan;
  if (plan.excluded.length === 0) {
    throw new GatewayError('no_endpoint_available', `no endpoint serves model ${JSON.stringify(req.model)}`, { param: 'model', metadata: { unknown_models: unknown } });
  }
  if (modalityError && plan.excluded.every((e) => e.reason === 'input_modality')) throw modalityError;
  const reasons = plan.excluded.map((e) => `${e.endpoint}: ${e.detail}`).join('; ');
  const all = (...r: ExclusionReason[]) => plan.excluded.every((e) => r.includes(e.reason));
  const metadata = { excluded: plan.excluded };
  if (all('circuit_open', 'cooldown')) {
    throw new GatewayError('endpoints_unavailable', `every endpoint of ${JSON.stringify(req.model)} is temporarily unavailable: ${reasons}`, {
      retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)),
      metadata,
    });
  }
  if (all('context_length')) {
    throw new GatewayError('context_length_exceeded', `the request does not fit the context window of ${JSON.stringify(req.model)}: ${reasons}`, { param: 'messages', metadata });
  }
  // Only the output limit: say how to get an answer.
  const hint = all('max_completion_tokens') ? '; lower the output limit, or have the operator set output_limit: clamp on the model to send at most its max_completion_tokens' : '';
  throw new GatewayError('no_endpoint_available', `no endpoint can serve this request for model ${JSON.stringify(req.model)}: ${reasons}${hint}`, { metadata });
}

/** Exclusions that come from endpoint health, not from what the request asked. */
const HEALTH_REASONS: ReadonlySet<ExclusionReason> = new Set(['circuit_open', 'cooldown']);

/**
 * Whether a routing refusal came from what the request asked — its output limit, tools,
 * parameters, context, provider preferences — for a model that exists: a
 * `no_endpoint_available` whose `metadata.excluded` lists only such reasons (no endpoint
 * health). Unknown models and embedding-only models are not.
 */
export function refusedForWhatItAsked(err: GatewayError): boolean {
  const excluded = err.metadata?.excluded as Exclusion[] | undefined;
  return err.code === 'no_endpoint_available' && Array.isArray(excluded) && excluded.length > 0 && excluded.every((e) => !HEALTH_REASONS.has(e.reason));
}
