import type { FastifyInstance } from 'fastify';
import type { IngressRoute } from '../../ingress/registry.js';
import { countMessagesTokens } from '../../pipeline/stages/count-tokens.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { pickHeaders, routeConfig } from './generate.js';

/**
 * A `count-tokens` route of the ingress registry (`POST /v1/messages/count_tokens`, Anthropic):
 * `{"input_tokens": N}`; the header `x-op-token-count` says whether the upstream counted
 * (`upstream`) or the gateway estimated (`estimated`), `x-ratelimit-*` the key's rate-limit
 * state (a 429 carries them too). The API's `forwardHeaders` go upstream. Errors use the API's
 * envelope (send-error.ts picks it by path).
 */
export function registerCountTokensRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  const forward = route.ingress.output === 'generation' ? (route.ingress.forwardHeaders ?? []) : [];
  app.route({
    method: route.method,
    url: route.path,
    config: routeConfig(route),
    handler: async (req, reply) => {
      const rateHeaders: Record<string, string> = {};
      try {
        const count = await countMessagesTokens(rt(), req.body, req.apiKey, pickHeaders(req.headers, forward), rateHeaders);
        reply.header('x-op-token-count', count.source).header('x-op-token-count-endpoint', count.endpoint);
        return { input_tokens: count.input_tokens };
      } finally {
        reply.headers(rateHeaders);
      }
    },
  });
}
