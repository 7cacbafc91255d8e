import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import type { IngressRoute } from '../../ingress/registry.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { modelVisibleTo } from '../../routing/catalog.js';
import { routeConfig } from './generate.js';

/**
 * A `list-models` or `get-model` route of an API with its own model shapes (Gemini's `GET
 * /v1beta/models`, `GET /v1beta/models/{model}`): the models the key may see, in the adapter's
 * `modelList` shape; `get-model` reads the model (or alias) from the path's wildcard, a
 * `models/` prefix off, and answers a 404 `not_found` for a model the key cannot see.
 */
export function registerModelShapeRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  const shape = route.ingress.modelList;
  if (!shape) throw new Error(`${route.method} ${route.path}: the ${route.ingress.api} adapter declares ${route.operation} without modelList`);
  app.route({
    method: route.method,
    url: route.path,
    config: routeConfig(route),
    handler: async (req) => {
      const allowed = req.apiKey.settings.allowed_models;
      const catalog = rt().catalog;
      if (route.operation === 'list-models') {
        return shape.body([...catalog.models.values()].filter((m) => modelVisibleTo(allowed, m.model.id)).map((m) => m.model), req.query as Record<string, string | undefined>);
      }
      const name = ((req.params as Record<string, string>)['*'] ?? '').replace(/^models\//, '');
      const entry = catalog.models.get(name) ?? [...catalog.models.values()].find((m) => m.model.aliases.includes(name));
      if (!entry || !modelVisibleTo(allowed, entry.model.id)) throw new GatewayError('not_found', `no model ${JSON.stringify(name)} in the catalog`, { param: 'model' });
      return shape.one ? shape.one(entry.model) : shape.body([entry.model], {});
    },
  });
}
