import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { LoadedConfig } from '../config/load.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import type { BatchRunner } from '../pipeline/batches/batch-runner.js';
import { newRequestId } from '../util/ids.js';
import { buildRuntime, type GatewayOptions } from './build-runtime.js';
import type { AlertDispatcher } from '../alerts/alert-dispatcher.js';
import { clientErrorHandler, clientTimeoutOptions } from './client-limits.js';
import { ConnectionDrain } from './connection-drain.js';
import { registerRoutes } from './register-routes.js';
import { requestIdOf } from './request-id.js';
import type { RegisteredRoute } from './route-auth.js';
import { sendError } from './send-error.js';
import { buildSso } from './sso/sso-auth.js';

export type { GatewayOptions } from './build-runtime.js';

/** A built gateway: the Fastify app and what it runs on. */
export interface Gateway {
  app: FastifyInstance;
  runtime: () => GatewayRuntime;
  /**
   * Swap in a new validated config file without dropping requests (merged with the providers and
   * models stored through the catalog API).
   * @throws ConfigError when the file and the stored entries do not validate together (nothing changes).
   */
  reload(loaded: LoadedConfig): void;
  /** The config file's config in force (without the stored catalog entries). */
  fileConfig(): LoadedConfig;
  /** Stop accepting, wait for in-flight requests, flush records, close pools. */
  close(): Promise<void>;
  /** Every registered route with its access level (public, key, metrics). */
  routes(): RegisteredRoute[];
  /** Alerts (src/alerts/): tests wait on `idle()`. */
  alerts: AlertDispatcher;
  /** The batch worker pool of this process (pipeline/batches/batch-runner.ts). */
  batches: BatchRunner;
}

/**
 * Build the gateway: the Fastify app, the runtime it serves from (build-runtime.ts) and its
 * routes, auth and error envelope (register-routes.ts). Nothing listens until `app.listen` is
 * called.
 */
export function buildGateway(options: GatewayOptions): Gateway {
  const config = options.loaded.config;
  // Before anything starts: a missing session secret is a startup error (ConfigError).
  const sso = buildSso(config.dashboard.oidc);
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.server.body_limit_bytes,
    ...clientTimeoutOptions(config.server),
    genReqId: requestIdOf,
    requestIdHeader: false,
    // One log line per request comes from our own hooks (and one per generation), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Node's close ends only the connections idle at that moment; ConnectionDrain ends the others.
    forceCloseConnections: 'idle',
    // Requests Node could not parse or that timed out before Fastify saw them: the same envelope.
    clientErrorHandler,
    // Malformed URLs and the like get the same error envelope as everything else.
    frameworkErrors: (err, req, reply) => {
      sendError(reply, new GatewayError('invalid_request', `bad request: ${err.message}`), String(req.id ?? newRequestId()));
    },
  });
  // At close, every client connection ends once its requests in flight are answered (a spare
  // socket or a kept-alive one would otherwise hold app.close(): connection-drain.ts).
  const drain = new ConnectionDrain(app.server);
  app.addHook('preClose', (done) => {
    drain.start();
    done();
  });
  const built = buildRuntime(options, app.log);
  const { runtime, redis } = built;
  // The one Redis connection, waited for before the server listens (onReady runs before listen).
  if (redis) app.addHook('onReady', () => redis.waitUntilReady());
  // The providers and models stored through the catalog API, in force before the first request.
  app.addHook('onReady', () => built.catalog.start());
  const rt = () => runtime;
  // Batch lines run once the server is up (and the migrations applied by then).
  app.addHook('onReady', (done) => {
    built.batches.start();
    done();
  });
  const routes = registerRoutes(app, { rt, db: options.db, keys: built.keys, catalog: built.catalog, alerts: built.alerts, telemetry: options.telemetry, sso, batches: built.batches });

  return {
    app,
    routes,
    alerts: built.alerts,
    runtime: rt,
    batches: built.batches,
    reload: (loaded) => built.reload(loaded),
    fileConfig: () => built.catalog.fileConfig(),
    async close() {
      await built.stopBackground();
      await app.close();
      await built.close();
    },
  };
}
