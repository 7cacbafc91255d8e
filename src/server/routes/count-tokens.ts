import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
  app.route({ method: route.method, url: route.path, config: routeConfig(route), handler: countTokensHandler(rt, route) });
}

/**
 * The handler of a `count-tokens` route; the answer is the API's own count body (its
 * `countTokens.body`: Gemini's `{totalTokens}`), else Messages' `{input_tokens}`.
 */
export function countTokensHandler(rt: () => GatewayRuntime, route: IngressRoute) {
  const { ingress } = route;
  const forward = ingress.output === 'generation' ? (ingress.forwardHeaders ?? []) : [];
  const own = ingress.output === 'generation' ? ingress.countTokens : undefined;
  return async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    const rateHeaders: Record<string, string> = {};
    try {
      const count = await countMessagesTokens(rt(), req.body, req.apiKey, pickHeaders(req.headers, forward), rateHeaders, own ? ingress : undefined);
      reply.header('x-op-token-count', count.source).header('x-op-token-count-endpoint', count.endpoint);
      return own ? own.body(count.input_tokens) : { input_tokens: count.input_tokens };
    } finally {
      reply.headers(rateHeaders);
    }
  };
}
