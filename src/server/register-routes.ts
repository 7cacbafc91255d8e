import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { GatewayError } from '../errors/gateway-error.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import { gatewayErrorOf } from '../store/database.js';
import type { ApiKey } from '../store/keys.js';
import type { Database } from '../store/schema.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { BatchRunner } from '../pipeline/batches/batch-runner.js';
import type { KeyResolver } from './auth.js';
import { installClientLimits, sendBodyTooLarge } from './client-limits.js';
import { registerCors } from './cors.js';
import { parseJsonBody, type JsonBounds } from './json-body.js';
import { installOverload } from './overload.js';
import { trackOwnedPaths } from './method-not-allowed.js';
import { installRouteAuth, type RegisteredRoute } from './route-auth.js';
import { registerApiRoutes } from './routes/api-routes.js';
import { registerAuthRoutes } from './routes/auth.js';
import { registerAuditRoutes } from './routes/audit.js';
import { registerAlertRoutes } from './routes/alerts.js';
import type { AlertDispatcher } from '../alerts/alert-dispatcher.js';
import { registerBatchRoutes } from './routes/batches.js';
import { registerMessageBatchRoutes } from './routes/message-batches.js';
import { registerDashboard } from './routes/dashboard.js';
import { registerGenerationRoutes } from './routes/generation.js';
import { registerHealthRoute } from './routes/health.js';
import { registerKeyRoutes } from './routes/keys.js';
import { registerTeamRoutes } from './routes/teams.js';
import { registerCatalogRoutes } from './routes/catalog.js';
import type { CatalogSync } from './catalog-sync.js';
import { registerMcpRoutes } from './routes/mcp.js';
import { registerMcpCallRoutes } from './routes/mcp-calls.js';
import { registerMetricsRoute } from './routes/metrics.js';
import { registerModelRoutes } from './routes/models.js';
import { registerReadyRoute } from './routes/ready.js';
import { registerUsageRoutes } from './routes/usage.js';
import { sendError } from './send-error.js';
import type { Sso } from './sso/sso-auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key (set for every route whose access is `key`, see route-auth.ts). */
    apiKey: ApiKey;
  }
}

/** Map Fastify's own errors (body parsing, limits, media types) to catalog errors. */
export function fromFastifyError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('body_too_large', 'the request body is larger than the configured limit (server.body_limit_bytes)');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('unsupported_media_type', 'send the body as Content-Type: application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_json', 'the request body is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', 'Content-Length does not match the body');
    default:
      if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
        return new GatewayError('invalid_request', e.message ?? 'bad request', { status: e.statusCode });
      }
      // The usage, generation and key APIs while the database is down: 503 database_unavailable.
      return gatewayErrorOf(err);
  }
}

/**
 * A request URL as the log line shows it: the value of a `key` query parameter (the Gemini API's
 * `?key=`) replaced by `REDACTED`, so no key is ever logged.
 */
export function loggedUrl(url: string): string {
  return url.includes('key=') ? url.replace(/([?&]key=)[^&#]*/gi, '$1REDACTED') : url;
}

/** What {@link registerRoutes} serves from. */
export interface RouteDeps {
  rt: () => GatewayRuntime;
  db: Kysely<Database>;
  keys: KeyResolver;
  /** The providers and models entered through the catalog API. */
  catalog: CatalogSync;
  alerts: AlertDispatcher;
  telemetry?: Telemetry | undefined;
  /** Single sign-on (`dashboard.oidc`), when configured. */
  sso?: Sso | undefined;
  /** The batch worker pool, told how many interactive requests are in flight. */
  batches?: BatchRunner;
}

/** JSON only: any other content type (text/plain included) is a 415; compressed bodies too. */
function installJsonParser(app: FastifyInstance, runtime: GatewayRuntime): void {
  app.removeAllContentTypeParsers();
  const jsonBounds: JsonBounds = Object.freeze({ maxDepth: runtime.config.server.max_json_depth, maxValues: runtime.config.server.max_json_values, maxContainers: runtime.config.server.max_json_containers });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    try {
      // Bodies are read as sent: a compressed one would only fail as JSON, with its bytes in the message.
      const encoding = req.headers['content-encoding']?.trim().toLowerCase();
      if (encoding && encoding !== 'identity') {
        throw new GatewayError('unsupported_media_type', `the request body is sent with Content-Encoding: ${encoding.slice(0, 64)}; send it uncompressed`, { param: 'content-encoding' });
      }
      done(null, parseJsonBody(body as string, jsonBounds));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}

/**
 * Everything the HTTP server does around the runtime: the JSON body parser, client limits,
 * `x-request-id`, CORS, overload admission (overload.ts), route auth, the request log line, the error envelope and 404s, every
 * route (the client APIs' declared routes from ingress/registry.ts, the gateway's own APIs,
 * `/health`, `/ready`, `/metrics`, the dashboard) and the 405s of paths that belong to a route.
 * @returns every registered route with its access level (for `Gateway.routes()`).
 */
export function registerRoutes(app: FastifyInstance, deps: RouteDeps): () => RegisteredRoute[] {
  const { rt, db, keys } = deps;
  const runtime = rt();
  installJsonParser(app, runtime);
  app.decorateRequest('apiKey', null as unknown as ApiKey);
  app.decorateRequest('ssoSession', null);
  installClientLimits(app, () => rt().config.server);
  // Callback-style hooks: no promise per request on the hot path.
  app.addHook('onRequest', (req, reply, next) => {
    reply.header('x-request-id', req.id);
    next();
  });
  registerCors(app, runtime.config.server.cors);
  // Before route auth: a refusal under overload costs no key lookup and no body read.
  const overload = installOverload(app, rt);
  const sso = deps.sso;
  // The batch pool yields to the generation requests the server counts in flight.
  if (deps.batches) deps.batches.interactiveInFlight = () => overload.inFlight;
  const routes = installRouteAuth(app, { keys, metricsAuth: () => rt().config.server.metrics_auth, session: sso && ((req) => sso.authenticate(req)) });
  app.addHook('onResponse', (req, reply, next) => {
    if ((req.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') !== false) req.log.info({ method: req.method, url: loggedUrl(req.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    next();
  });

  app.setErrorHandler((err, req, reply) => {
    const gerr = fromFastifyError(err);
    if (gerr.code === 'internal_error') req.log.error({ err }, 'internal error');
    if (gerr.code === 'body_too_large') return sendBodyTooLarge(req, reply, gerr);
    sendError(reply, gerr, req.id);
  });
  app.setNotFoundHandler((req, reply) => {
    sendError(reply, new GatewayError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`), req.id);
  });

  // A known path with a wrong method is a 405, not a 404: every route with `ownsPath` is recorded.
  const registerMethodNotAllowed = trackOwnedPaths(app);
  registerHealthRoute(app);
  registerReadyRoute(app, rt, db, overload);
  registerMetricsRoute(app, rt, deps.telemetry);
  registerApiRoutes(app, rt);
  registerModelRoutes(app, rt);
  registerGenerationRoutes(app, rt, db);
  registerUsageRoutes(app, rt, db);
  registerKeyRoutes(app, rt, db, keys);
  registerTeamRoutes(app, rt, db, keys);
  registerCatalogRoutes(app, () => deps.catalog);
  registerAuditRoutes(app, db);
  registerAlertRoutes(app, rt, db, deps.alerts);
  registerMcpRoutes(app, rt);
  registerAuthRoutes(app, sso, db);
  registerMcpCallRoutes(app, rt, db);
  registerBatchRoutes(app, rt, db);
  registerMessageBatchRoutes(app, rt, db);
  registerMethodNotAllowed();
  registerDashboard(app);
  return routes;
}
