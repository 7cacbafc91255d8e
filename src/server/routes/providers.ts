import type { FastifyInstance } from 'fastify';
import type { ProviderConfig } from '../../config/schema.js';
import type { GatewayRuntime } from '../../pipeline/runtime.js';

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

/** `GET /v1/providers`: every configured provider. */
export function registerProviderRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.get('/v1/providers', async () => ({ data: rt().config.providers.map(providerObject) }));
}
