import type { GatewayConfig, ModelConfig } from '../config/schema.js';
import type { ResolvedEndpoint } from './resolved-endpoint.js';
import { providerCredentialViews, resolveCredentials } from './provider-credentials.js';

/** The models and endpoints of one config, resolved for routing. Immutable. */
export interface Catalog {
  readonly models: ReadonlyMap<string, { readonly model: ModelConfig; readonly endpoints: readonly ResolvedEndpoint[] }>;
  /** Whether any model is configured at all. */
  readonly empty: boolean;
  /** Model aliases from config (`aliases` of a model): alias → model id. */
  readonly aliases?: ReadonlyMap<string, string>;
}

/** Resolve every endpoint of a validated config (provider lookup, effective timeouts, the views of its provider's `api_keys`). */
export function buildCatalog(config: Readonly<GatewayConfig>): Catalog {
  const providers = new Map(config.providers.map((p) => [p.id, p]));
  // One frozen provider view per `api_keys` entry, shared by the provider's endpoints.
  const views = new Map(config.providers.map((p) => [p.id, providerCredentialViews(p)]));
  const models = new Map<string, { model: ModelConfig; endpoints: ResolvedEndpoint[] }>();
  for (const model of config.models) {
    const endpoints = model.endpoints.map((endpoint): ResolvedEndpoint => {
      const provider = providers.get(endpoint.provider)!;
      const target = {
        id: `${provider.id}/${endpoint.upstream_model}`,
        model,
        endpoint,
        provider,
        timeouts: Object.freeze({ ...provider.timeouts, ...(endpoint.timeouts ?? {}) }),
        contextLength: endpoint.context_length ?? model.context_length,
        outputLimit: endpoint.output_limit ?? model.output_limit ?? 'exclude',
      } as const;
      const credentials = resolveCredentials(target, views.get(provider.id));
      return Object.freeze(credentials === undefined ? target : { ...target, credentials });
    });
    models.set(model.id, { model, endpoints });
  }
  const aliases = new Map<string, string>();
  for (const model of config.models) for (const alias of model.aliases ?? []) aliases.set(alias, model.id);
  return Object.freeze({ models, empty: models.size === 0, aliases });
}

/**
 * The request with `model` and `models` aliases (config `models[].aliases`, e.g. the
 * `claude-sonnet-4-5` Claude Code sends) replaced by their catalog model ids; the same object
 * when none is an alias.
 */
export function resolveAliases<T extends { model: string; models?: string[] }>(catalog: Catalog, req: T): T {
  const aliases = catalog.aliases;
  if (!aliases || aliases.size === 0) return req;
  const model = aliases.get(req.model);
  const models = req.models?.some((m) => aliases.has(m)) ? req.models.map((m) => aliases.get(m) ?? m) : undefined;
  if (model === undefined && models === undefined) return req;
  return { ...req, ...(model !== undefined ? { model } : {}), ...(models !== undefined ? { models } : {}) };
}

/**
 * The entries of a key's `allowed_models` that name no model of the catalog, each with its
 * index, so a typo is refused when the key is created or changed instead of silently
 * allowing nothing.
 */
export function unknownModelIds(ids: readonly string[], catalog: Catalog): Array<{ index: number; id: string }> {
  return ids.flatMap((id, index) => (catalog.models.has(id) ? [] : [{ index, id }]));
}

/** A key's view of the catalog: every model when `allowed` is empty, else only those listed. */
export function modelVisibleTo(allowed: readonly string[], modelId: string): boolean {
  return allowed.length === 0 || allowed.includes(modelId);
}
