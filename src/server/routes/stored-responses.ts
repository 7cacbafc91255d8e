import type { FastifyInstance } from 'fastify';
import type { IngressRoute } from '../../ingress/registry.js';
import type { StoredResponseShapes } from '../../ingress/types.js';
import { deleteStoredResponse } from '../../pipeline/stages/delete-response.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { ApiKey } from '../../store/keys.js';
import { routeConfig } from './generate.js';

/** The owner a stored response is looked up under: the key's id; the admin key owns none. */
const owner = (key: ApiKey) => (key.isAdmin ? null : key.id);

/** The API's stored-response shapes. @throws Error for an API that declares the route without them. */
function shapesOf(route: IngressRoute): StoredResponseShapes {
  const shapes = route.ingress.storedResponses;
  if (!shapes) throw new Error(`${route.method} ${route.path}: the ${route.ingress.api} adapter declares ${route.operation} without storedResponses`);
  return shapes;
}

/**
 * A `get-response` route (`GET /v1/responses/{id}`): a stored response, for the key that
 * created it only (another key, the admin key included, reads a 404). Responses are stored
 * unless the request sent `store: false`, under a retention that keeps text, until that
 * retention runs out. A response kept by an older gateway gets the settings it lacks (their
 * defaults), so every body is complete (the adapter's `storedResponses.body`).
 * @see https://platform.openai.com/docs/api-reference/responses/get
 */
export function registerGetResponseRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  const shapes = shapesOf(route);
  app.route<{ Params: { id: string } }>({
    method: route.method,
    url: route.path,
    config: routeConfig(route),
    handler: async (req) => {
      const stored = await rt().responses.get(req.params.id, owner(req.apiKey));
      if (!stored) throw shapes.notFound(req.params.id);
      return shapes.body(stored.response);
    },
  });
}

/**
 * A `delete-response` route (`DELETE /v1/responses/{id}`): removes the response's text
 * everywhere it is kept (its cache entry, its generation record's text, the stored response:
 * pipeline/stages/delete-response.ts), for the key that created it only.
 */
export function registerDeleteResponseRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  const shapes = shapesOf(route);
  app.route<{ Params: { id: string } }>({
    method: route.method,
    url: route.path,
    config: routeConfig(route),
    handler: async (req) => {
      // The response's text goes everywhere it is kept: its cache entry, its record, the response.
      if (!(await deleteStoredResponse(rt(), req.params.id, owner(req.apiKey)))) throw shapes.notFound(req.params.id);
      return shapes.deleted(req.params.id);
    },
  });
}
