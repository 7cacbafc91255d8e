import type { GatewayConfig, ModelConfig } from '../config/schema.js';
import type { ResolvedEndpoint } from '../providers/types.js';

/** The models and endpoints of one config, resolved for routing. Immutable. */
export interface Catalog {
  readonly models: ReadonlyMap<string, { readonly model: ModelConfig; readonly endpoints: readonly ResolvedEndpoint[] }>;
  /** Whether any model is configured at all. */
  readonly empty: boolean;
}

/** Resolve every endpoint of a validated config (provider lookup, effective timeouts). */
export function buildCatalog(config: Readonly<GatewayConfig>): Catalog {
  const providers = new Map(config.providers.map((p) => [p.id, p]));
  const models = new Map<string, { model: ModelConfig; endpoints: ResolvedEndpoint[] }>();
  for (const model of config.models) {
    const endpoints = model.endpoints.map((endpoint): ResolvedEndpoint => {
      const provider = providers.get(endpoint.provider)!;
      return Object.freeze({
        id: `${provider.id}/${endpoint.upstream_model}`,
        model,
        endpoint,
        provider,
        timeouts: Object.freeze({ ...provider.timeouts, ...(endpoint.timeouts ?? {}) }),
        contextLength: endpoint.context_length ?? model.context_length,
      });
    });
    models.set(model.id, { model, endpoints });
  }
  return Object.freeze({ models, empty: models.size === 0 });
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
