import type { FastifyInstance } from 'fastify';
import type { ProviderConfig } from '../../config/schema.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { Catalog } from '../../routing/catalog.js';

/**
 * One configured provider in OpenRouter's `GET /providers` shape (`slug` is the provider id
 * used in `provider.order`/`only`/`ignore`), with the gateway's own `kind` and `data_policy`.
 * The policy URLs OpenRouter lists are unknown to a self-hosted gateway: null.
 * @see https://openrouter.ai/docs/api-reference/providers/list-providers
 */
export function providerObject(p: ProviderConfig) {
  return {
    slug: p.id,
    name: p.id,
    kind: p.kind,
    privacy_policy_url: null,
    terms_of_service_url: null,
    status_page_url: null,
    data_policy: p.data_policy,
  };
}

/**
 * The providers a key may reach: every configured provider for a key without `allowed_models`;
 * otherwise only those serving an endpoint of an allowed model (in config order), so the list
 * names no provider the key could never be routed to, like `GET /v1/models` names no model.
 */
export function providersVisibleTo(providers: readonly ProviderConfig[], catalog: Catalog, allowed: readonly string[]): ProviderConfig[] {
  if (allowed.length === 0) return [...providers];
  const serving = new Set<string>();
  for (const id of allowed) for (const t of catalog.models.get(id)?.endpoints ?? []) serving.add(t.provider.id);
  return providers.filter((p) => serving.has(p.id));
}

/** `GET /v1/providers`: the configured providers the key may reach ({@link providersVisibleTo}). */
export function registerProviderRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.get('/v1/providers', async (req) => {
    const runtime = rt();
    return { data: providersVisibleTo(runtime.config.providers, runtime.catalog, req.apiKey.settings.allowed_models).map(providerObject) };
  });
}
