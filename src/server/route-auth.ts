import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { KeyResolver } from './auth.js';
import type { ApiKey } from '../store/keys.js';

/**
 * Who may call a route, decided from the route the request was matched to — never from the
 * raw URL, which a client can spell many ways (`/%76%31/models`, `//v1/models`, `/V1/…`):
 * - `key` (the default): a valid client key or the admin key;
 * - `public`: no key (liveness, readiness, the dashboard's static files, CORS preflights);
 * - `metrics`: public unless `server.metrics_auth` is true, then the admin key only.
 */
export type RouteAccess = 'key' | 'public' | 'metrics';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call this route (see {@link RouteAccess}); `key` when unset. */
    access?: RouteAccess;
    /** The key may come as the `key` query parameter (the Gemini API's routes); never logged. */
    keyInQuery?: boolean;
  }
}

/** One registered route, as the route table knows it (for tests and diagnostics). */
export interface RegisteredRoute {
  method: string;
  url: string;
  access: RouteAccess;
}

/** What {@link installRouteAuth} needs from the running gateway. */
export interface RouteAuthOptions {
  keys: KeyResolver;
  /** Whether `/metrics` needs the admin key (`server.metrics_auth`; read per request, so reloads apply). */
  metricsAuth: () => boolean;
  /**
   * Single sign-on (sso/sso-auth.ts): the key a request's session cookie stands for, asked when
   * the request carries no key; undefined without a session cookie.
   */
  session?: ((req: FastifyRequest) => ApiKey | undefined) | undefined;
}

function accessOf(options: RouteOptions): RouteAccess {
  const methods = Array.isArray(options.method) ? options.method : [options.method];
  // A CORS preflight never carries credentials: browsers send it without them.
  if (methods.length > 0 && methods.every((m) => m === 'OPTIONS')) return 'public';
  return options.config?.access ?? 'key';
}

/**
 * Authenticate every request by the access level of its matched route (`onRequest`). Requests
 * that match no route go to the 404 handler without a key (a 404 reveals nothing).
 * Must be installed before any route is registered.
 * @returns a function listing every route registered afterwards, with its final access level.
 */
export function installRouteAuth(app: FastifyInstance, options: RouteAuthOptions): () => RegisteredRoute[] {
  const seen: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, access: accessOf(route) };
    seen.push(route);
  });
  // Callback style, with the key cache answered synchronously: no promise per request when
  // the key was seen within the cache's lifetime (the common case).
  app.addHook('onRequest', (req: FastifyRequest, _reply, next) => {
    if (req.is404) return next();
    const access = req.routeOptions.config.access ?? 'key';
    if (access === 'public') return next();
    if (access === 'metrics') {
      if (!options.metricsAuth()) return next();
      options.keys.authenticate(req).then((key) => {
        if (!key.isAdmin) throw new GatewayError('admin_key_required', '/metrics needs the admin key (OP_ADMIN_KEY) because server.metrics_auth is on');
        req.apiKey = key;
        next();
      }).catch((err: Error) => next(err));
      return;
    }
    let known: ApiKey | undefined;
    try {
      known = options.keys.authenticateCached(req);
    } catch (err) {
      // No key sent: a dashboard session cookie may stand for one.
      if (options.session && err instanceof GatewayError && err.code === 'missing_api_key') {
        try {
          known = options.session(req);
        } catch (sessionErr) {
          return next(sessionErr as Error);
        }
      }
      if (!known) return next(err as Error);
    }
    if (known) {
      req.apiKey = known;
      return next();
    }
    options.keys.authenticate(req).then((key) => {
      req.apiKey = key;
      next();
    }, (err: Error) => next(err));
  });
  // Scopes' own onRoute hooks (makeScopePublic) run after this one: read the final config.
  return () =>
    seen.flatMap((route) =>
      (Array.isArray(route.method) ? route.method : [route.method]).map((method) => ({ method, url: route.url, access: route.config?.access ?? 'key' })),
    );
}

/** Mark every route registered in `scope` (an encapsulated plugin, e.g. static files) as public. */
export function makeScopePublic(scope: FastifyInstance): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, access: 'public' };
  });
}
