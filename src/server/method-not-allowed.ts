import type { FastifyInstance, HTTPMethods } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { RouteAccess } from './route-auth.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's path belongs to it alone: the other methods answer 405 `method_not_allowed`
     * (`use GET for /v1/models`) instead of 404 (see {@link trackOwnedPaths}).
     */
    ownsPath?: boolean;
  }
}

/** The methods a path that belongs to a route answers 405 for, when the route does not take them. */
const METHODS: readonly HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Record every route registered afterwards with `config.ownsPath` (the declared API routes
 * without parameters, `/v1/models`, `/health` …).
 * @returns a function that registers, for every recorded path, the other methods as a 405
 *   `method_not_allowed` "use POST for /v1/messages" with the path's access level (so a 405 is
 *   authenticated like its route); call it once, after every route is registered.
 */
export function trackOwnedPaths(app: FastifyInstance): () => void {
  const owned = new Map<string, { methods: string[]; access: RouteAccess }>();
  app.addHook('onRoute', (route) => {
    if (route.config?.ownsPath !== true) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const entry = owned.get(route.url) ?? { methods: [], access: route.config.access ?? 'key' };
    entry.methods.push(...methods.filter((m) => m !== 'HEAD'));
    owned.set(route.url, entry);
  });
  return () => {
    for (const [url, { methods, access }] of owned) {
      const message = `use ${methods.join(', ')} for ${url}`;
      const others = METHODS.filter((m) => !methods.includes(m));
      app.route({ method: [...others], url, config: { access }, handler: async () => { throw new GatewayError('method_not_allowed', message); } });
    }
  };
}
