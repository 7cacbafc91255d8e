import type { FastifyInstance } from 'fastify';
import type { ModelConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { IngressRoute } from '../../ingress/registry.js';
import type { ModelListShape } from '../../ingress/types.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { modelVisibleTo } from '../../routing/catalog.js';
import { routeConfig } from './generate.js';

/**
 * One model of a `get-model` route in an API's own shape: `path` is the model id or an alias,
 * with or without Google's `models/` prefix; the answer names it as asked.
 * @throws GatewayError `not_found` (`param: "model"`) for a model not in the catalog or one the
 *   key's `allowed_models` hides.
 */
export function shapedModel(rt: GatewayRuntime, allowed: readonly string[], shape: ModelListShape, path: string): unknown {
  const name = path.replace(/^models\//, '');
  const catalog = rt.catalog;
  const entry = catalog.models.get(name) ?? [...catalog.models.values()].find((m) => m.model.aliases.includes(name));
  if (!entry || !modelVisibleTo(allowed, entry.model.id)) throw new GatewayError('not_found', `no model ${JSON.stringify(name)} in the catalog`, { param: 'model' });
  const model: ModelConfig = entry.model;
  return shape.one ? shape.one(model, name) : shape.body([model], {});
}

/**
 * A `list-models` or `get-model` route of an API with its own model shapes (Gemini's `GET
 * /v1beta/models`, `GET /v1beta/models/{model}`): the models the key may see, in the adapter's
 * `modelList` shape; `get-model` reads the model (or alias) from the path's wildcard, a
 * `models/` prefix off, answers it under the name asked for (an alias's `name` is
 * `models/<alias>`, as Google names the model asked for), and a 404 `not_found` for a model the
 * key cannot see.
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
      if (route.operation === 'list-models') {
        return shape.body([...rt().catalog.models.values()].filter((m) => modelVisibleTo(allowed, m.model.id)).map((m) => m.model), req.query as Record<string, string | undefined>);
      }
      return shapedModel(rt(), allowed, shape, (req.params as Record<string, string>)['*'] ?? '');
    },
  });
}
