import type { FastifyInstance, FastifyRequest } from 'fastify';
import { picoToUsdString, toMicros } from '../../accounting/cost.js';
import { EXPLICIT_PROMPT_CACHING, type ModelConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { modelVisibleTo } from '../../routing/catalog.js';
import { MODEL_LIST_SHAPES } from '../../ingress/registry.js';
import { registerProviderRoutes } from './providers.js';
import { shapedModel } from './model-shapes.js';

/** USD per 1M tokens → USD per token as an exact decimal string (OpenRouter's catalog unit). */
const perToken = (price: number | string): string => picoToUsdString(toMicros(price));

/**
 * A catalog entry: OpenAI's model object plus OpenRouter's fields. Pricing is the cheapest
 * endpoint's, in USD per token (strings); `supported_parameters` is the union over endpoints.
 */
export function modelObject(model: ModelConfig) {
  const cheapest = [...model.endpoints].sort((a, b) => Number(toMicros(a.pricing.prompt) + toMicros(a.pricing.completion) - toMicros(b.pricing.prompt) - toMicros(b.pricing.completion)))[0]!;
  const params = new Set<string>(['max_tokens', 'max_completion_tokens']);
  for (const e of model.endpoints) for (const p of e.supported_parameters) params.add(p);
  const maxCompletion = Math.max(0, ...model.endpoints.map((e) => e.max_completion_tokens ?? 0));
  return {
    id: model.id,
    canonical_slug: model.id,
    object: 'model',
    created: 0,
    owned_by: model.id.split('/')[0]!,
    name: model.name ?? model.id,
    description: model.description ?? '',
    context_length: model.context_length,
    architecture: architectureObject(model),
    pricing: {
      prompt: perToken(cheapest.pricing.prompt),
      completion: perToken(cheapest.pricing.completion),
      request: picoToUsdString(toMicros(cheapest.pricing.request) * 1_000_000n),
      input_cache_read: cheapest.pricing.cache_read !== undefined ? perToken(cheapest.pricing.cache_read) : undefined,
      input_cache_write: cheapest.pricing.cache_write !== undefined ? perToken(cheapest.pricing.cache_write) : undefined,
    },
    top_provider: { context_length: model.context_length, max_completion_tokens: maxCompletion || null, is_moderated: false },
    per_request_limits: null,
    default_parameters: null,
    supported_parameters: [...params].sort(),
    supported_voices: null,
    knowledge_cutoff: null,
    expiration_date: null,
    links: { details: `/v1/models/${model.id}/endpoints` },
  };
}

/** OpenRouter's `architecture`: modalities, the `modality` summary, tokenizer, no instruct type. */
function architectureObject(model: ModelConfig) {
  const a = model.architecture;
  return {
    modality: `${a.input_modalities.join('+')}->${a.output_modalities.join('+')}`,
    input_modalities: a.input_modalities,
    output_modalities: a.output_modalities,
    tokenizer: a.tokenizer,
    instruct_type: null,
  };
}

/**
 * The OpenAI/OpenRouter model list the key may see: `data`, plus OpenRouter's `total_count`
 * and `links.next` (always null: the whole catalog is one page).
 */
export function openAIModelList(runtime: GatewayRuntime, allowed: readonly string[]) {
  const data = [...runtime.catalog.models.values()].filter((m) => modelVisibleTo(allowed, m.model.id)).map((m) => modelObject(m.model));
  return { object: 'list', data, total_count: data.length, links: { next: null } };
}

/**
 * `GET /v1/models/{author}/{slug}/endpoints` in OpenRouter's `ListEndpointsResponse` shape.
 * @see https://openrouter.ai/docs/api-reference/endpoints/list-endpoints
 */
export function modelEndpointsObject(entry: { model: ModelConfig; endpoints: readonly ResolvedEndpoint[] }, runtime: GatewayRuntime) {
  const model = entry.model;
  return {
    id: model.id,
    name: model.name ?? model.id,
    created: 0,
    description: model.description ?? '',
    architecture: architectureObject(model),
    endpoints: entry.endpoints.map((t) => endpointObject(t, runtime)),
  };
}

/**
 * One endpoint with pricing (USD per token, strings), limits and live health: circuit state,
 * uptime (share of successful attempts, rate limits excluded), time to first token (ms) and
 * throughput (output tokens per second) percentiles over the last 30 minutes.
 */
export function endpointObject(t: ResolvedEndpoint, runtime: GatewayRuntime) {
  const stats = runtime.health.stats(t.id);
  const p = t.endpoint.pricing;
  const params = t.endpoint.supported_parameters as readonly string[];
  const tools = params.includes('tools');
  return {
    name: `${t.provider.id} | ${t.model.id}`,
    tag: t.id,
    model_id: t.model.id,
    model_name: t.model.name ?? t.model.id,
    provider_name: t.provider.id,
    provider_kind: t.provider.kind,
    upstream_model: t.endpoint.upstream_model,
    context_length: t.contextLength,
    max_completion_tokens: t.endpoint.max_completion_tokens ?? null,
    max_prompt_tokens: null,
    supports_implicit_caching: t.endpoint.pricing.cache_read !== undefined && !EXPLICIT_PROMPT_CACHING.has(t.provider.kind),
    supports_tool_choice: { auto: tools, none: tools, required: tools && params.includes('tool_choice'), function: tools && params.includes('tool_choice') },
    pricing: {
      prompt: perToken(p.prompt),
      completion: perToken(p.completion),
      request: picoToUsdString(toMicros(p.request) * 1_000_000n),
      input_cache_read: p.cache_read !== undefined ? perToken(p.cache_read) : undefined,
      input_cache_write: p.cache_write !== undefined ? perToken(p.cache_write) : undefined,
    },
    quantization: t.endpoint.quantization ?? 'unknown',
    supported_parameters: [...t.endpoint.supported_parameters],
    data_policy: t.provider.data_policy,
    status: stats.circuit === 'closed' ? 0 : -1,
    ...stats,
  };
}

/**
 * `GET /v1/models` and `GET /v1/models/{author}/{slug}`. A key with `allowed_models` sees only
 * those models: the others are left out of the list and are a 404, like a model not configured.
 * The list comes in a client API's own shape when the request asks for it (the adapters'
 * `modelList`: Anthropic's with `anthropic-version`, Gemini's with `x-goog-api-key`), else in
 * OpenAI/OpenRouter's; so does one model when the shape has one (Gemini's `Model`).
 */
export function registerModelRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.get('/v1/models', { config: { ownsPath: true, teamRoles: true } }, async (req) => {
    const allowed = req.apiKey.settings.allowed_models;
    const shape = MODEL_LIST_SHAPES.find((s) => s.wants(req.headers));
    if (shape) {
      return shape.body([...rt().catalog.models.values()].filter((m) => modelVisibleTo(allowed, m.model.id)).map((m) => m.model), req.query as Record<string, string | undefined>);
    }
    return openAIModelList(rt(), allowed);
  });
  const entryFor = (req: FastifyRequest, id: string) => {
    const entry = rt().catalog.models.get(id);
    if (!entry || !modelVisibleTo(req.apiKey.settings.allowed_models, id)) throw new GatewayError('not_found', `no model ${JSON.stringify(id)} in the catalog`, { param: 'model' });
    return entry;
  };
  // A Google client on `/v1` (`apiVersion: "v1"`) gets Gemini's Model, aliases included.
  const retrieve = (req: FastifyRequest, id: string) => {
    const shape = MODEL_LIST_SHAPES.find((s) => s.one && s.wants(req.headers));
    return shape ? shapedModel(rt(), req.apiKey.settings.allowed_models, shape, id) : modelObject(entryFor(req, id).model);
  };
  app.get<{ Params: { author: string; slug: string } }>('/v1/models/:author/:slug', { config: { teamRoles: true } }, async (req) => retrieve(req, `${req.params.author}/${req.params.slug}`));
  app.get<{ Params: { author: string; slug: string } }>('/v1/models/:author/:slug/endpoints', { config: { teamRoles: true } }, async (req) => {
    return { data: modelEndpointsObject(entryFor(req, `${req.params.author}/${req.params.slug}`), rt()) };
  });
  registerProviderRoutes(app, rt);
  // The OpenAI SDK's models.retrieve('author/slug') encodes the slash: /v1/models/author%2Fslug.
  app.get<{ Params: { id: string } }>('/v1/models/:id', { config: { teamRoles: true } }, async (req) => retrieve(req, req.params.id));
}
