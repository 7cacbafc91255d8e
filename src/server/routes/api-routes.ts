import type { FastifyInstance } from 'fastify';
import { API_ROUTES, type IngressRoute } from '../../ingress/registry.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { registerCountTokensRoute } from './count-tokens.js';
import { registerCustomMethodRoutes } from './custom-methods.js';
import { registerModelShapeRoute } from './model-shapes.js';
import { registerGenerateRoute } from './generate.js';
import { registerDeleteResponseRoute, registerGetResponseRoute } from './stored-responses.js';

/** Register one declared API route with the generic handler of its operation. */
function registerApiRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  switch (route.operation) {
    case 'generate':
      return registerGenerateRoute(app, rt, route);
    case 'count-tokens':
      return registerCountTokensRoute(app, rt, route);
    case 'get-response':
      return registerGetResponseRoute(app, rt, route);
    case 'delete-response':
      return registerDeleteResponseRoute(app, rt, route);
    case 'list-models':
    case 'get-model':
      return registerModelShapeRoute(app, rt, route);
  }
}

/**
 * Every route the client APIs declare (ingress/registry.ts `API_ROUTES`: `POST /v1/chat/completions`,
 * `/v1/messages/count_tokens`, `GET /v1/responses/:id` …), each with its operation's handler.
 */
export function registerApiRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  for (const route of API_ROUTES) if (route.action === undefined) registerApiRoute(app, rt, route);
  // Google's custom methods (`…/models/{model}:generateContent`): one route per wildcard path.
  registerCustomMethodRoutes(app, rt, API_ROUTES.filter((r) => r.action !== undefined));
}
