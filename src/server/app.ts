import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Kysely } from 'kysely';
import type { LoadedConfig } from '../config/load.js';
import { GatewayError } from '../errors/gateway-error.js';
import { gatewayErrorOf } from '../store/database.js';
import { describeWriteError } from '../store/record-guard.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import { UpstreamPools } from '../upstream/upstream-pools.js';
import { LiveUpstreamCalls } from '../upstream/upstream-exchange.js';
import { buildCatalog } from '../routing/catalog.js';
import { HealthRegistry, type HealthSettings } from '../routing/endpoint-health.js';
import type { GatewayConfig } from '../config/schema.js';
import { GenerationWriter } from '../store/generation-writer.js';
import type { ApiKey } from '../store/keys.js';
import type { Database } from '../store/schema.js';
import { newRequestId } from '../util/ids.js';
import { requestIdOf } from './request-id.js';
import { installRouteAuth, type RegisteredRoute } from './route-auth.js';
import { registerCors } from './cors.js';
import { KeyResolver } from './auth.js';
import { parseJsonBody, type JsonBounds } from './json-body.js';
import { registerGenerateRoutes } from './routes/generate.js';
import { registerCountTokensRoute } from './routes/messages-count-tokens.js';
import { registerResponseRoutes } from './routes/responses.js';
import { StoredResponseStore } from '../store/stored-responses.js';
import { registerGenerationRoutes } from './routes/generation.js';
import { registerModelRoutes } from './routes/models.js';
import { registerUsageRoutes } from './routes/usage.js';
import { registerKeyRoutes } from './routes/keys.js';
import { registerDashboard } from './routes/dashboard.js';
import { MemoryLimitStore } from '../limits/memory-limit-store.js';
import { RedisLimitStore } from '../limits/redis-limit-store.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { DatabaseResponseCacheStore } from '../cache/database-response-cache-store.js';
import { RedisResponseCacheStore } from '../cache/redis-response-cache-store.js';
import { sql } from 'kysely';
import { GatewayMetrics } from '../pipeline/state/metrics.js';
import { startRetentionPurge } from '../store/retention-purge.js';
import { localKeyChanges, RedisKeyChangeNotifier } from '../store/key-change-notifier.js';
import { localHealth, RedisHealthSharing } from '../routing/health-sharing.js';
import { fleetLease } from '../store/fleet-lease.js';
import { sendError } from './send-error.js';
import { localModelsNotReady } from '../providers/local/local-model-files.js';
import { clientErrorHandler, clientTimeoutOptions, installClientLimits, sendBodyTooLarge } from './client-limits.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { subscribeGenAiPrometheus } from '../telemetry/prometheus-genai.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated key (set for every route whose access is `key`, see route-auth.ts). */
    apiKey: ApiKey;
  }
}

/** Options of {@link buildGateway}. */
export interface GatewayOptions {
  loaded: LoadedConfig;
  db: Kysely<Database>;
  /** `OP_ADMIN_KEY`: accepted as a key that sees everything. */
  adminKey?: string | undefined;
  /** Fastify logger option (pino options, or false). */
  logger?: FastifyServerOptions['logger'];
  /** Random source for the price-weighted endpoint choice (tests pass a seeded one). */
  random?: () => number;
  /** How often stored text past its retention is purged, in ms (0 = never; default 1 h). */
  purgeIntervalMs?: number;
  /** `OP_REDIS_URL`: share key limits, endpoint health and key changes across replicas through Redis. */
  redisUrl?: string | undefined;
  /** A running OpenTelemetry export (see startTelemetry): shut down with the gateway. */
  telemetry?: Telemetry | undefined;
  /** `OP_REDIS_PREFIX`: prefix of every Redis key and channel (default `op:`). */
  redisPrefix?: string | undefined;
}

function healthSettings(config: Readonly<GatewayConfig>): HealthSettings {
  const r = config.routing;
  return {
    failureThreshold: r.circuit_breaker.failure_threshold,
    openMs: r.circuit_breaker.open_ms,
    windowMs: r.stats_window_ms,
    recentFailureMs: r.recent_failure_ms,
  };
}

/** A built gateway: the Fastify app and what it runs on. */
export interface Gateway {
  app: FastifyInstance;
  runtime: () => GatewayRuntime;
  /** Swap in a new validated config without dropping requests. */
  reload(loaded: LoadedConfig): void;
  /** Stop accepting, wait for in-flight requests, flush records, close pools. */
  close(): Promise<void>;
  /** Every registered route with its access level (public, key, metrics). */
  routes(): RegisteredRoute[];
}

/** Map Fastify's own errors (body parsing, limits, media types) to catalog errors. */
function fromFastifyError(err: unknown): GatewayError {
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
 * Build the gateway: Fastify app, routes, auth, error envelope, record writer.
 * Nothing listens until `app.listen` is called.
 */
export function buildGateway(options: GatewayOptions): Gateway {
  const { db } = options;
  let config = options.loaded.config;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.server.body_limit_bytes,
    ...clientTimeoutOptions(config.server),
    genReqId: requestIdOf,
    requestIdHeader: false,
    // One log line per request comes from our own hooks (and one per generation), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // Requests Node could not parse or that timed out before Fastify saw them: the same envelope.
    clientErrorHandler,
    // Malformed URLs and the like get the same error envelope as everything else.
    frameworkErrors: (err, req, reply) => {
      sendError(reply, new GatewayError('invalid_request', `bad request: ${err.message}`), String(req.id ?? newRequestId()));
    },
  });
  // The one Redis connection, waited for before the server listens (onReady runs before listen).
  const redis = options.redisUrl ? new RedisConnection(options.redisUrl, { commandTimeoutMs: config.redis.command_timeout_ms, connectTimeoutMs: config.redis.connect_timeout_ms }, app.log, options.redisPrefix) : undefined;
  if (redis) app.addHook('onReady', () => redis.waitUntilReady());
  const observePoolWait = (provider: string, ms: number) => runtime.metrics.poolWait.observe({ provider }, ms / 1000);
  const cacheBounds = { maxEntryBytes: config.cache.max_entry_bytes, maxTotalBytes: config.cache.max_total_bytes };
  const runtime: GatewayRuntime = {
    config,
    catalog: buildCatalog(config),
    pools: new UpstreamPools(observePoolWait),
    writer: new GenerationWriter(db, app.log, config.records.flush_interval_ms),
    log: app.log,
    adapters: new Map(),
    health: new HealthRegistry(healthSettings(config)),
    random: options.random ?? Math.random,
    inFlight: 0,
    redis,
    limits: redis ? new RedisLimitStore(redis, redis.prefix) : new MemoryLimitStore(),
    metrics: new GatewayMetrics(),
    cache: redis ? new RedisResponseCacheStore(redis, cacheBounds, `${redis.prefix}cache:`) : new DatabaseResponseCacheStore(db, cacheBounds),
    shutdown: new AbortController(),
    upstreamCalls: new LiveUpstreamCalls(),
    responses: new StoredResponseStore(db, app.log),
    async loadSpent(keyId, periodStart) {
      // A GatewayError (database_unavailable while the database is down), so the Redis limit store does not take it for its own failure.
      const row = await db
        .selectFrom('usage_hourly')
        .select(sql<string | null>`CAST(SUM(cost_pico) AS TEXT)`.as('total'))
        .where('key_id', '=', keyId)
        .where('hour', '>=', periodStart)
        .executeTakeFirst()
        .catch((err: unknown) => {
          throw gatewayErrorOf(err);
        });
      return BigInt(row?.total ?? '0');
    },
  };
  runtime.writer.configure(config.records);
  runtime.shutdown.signal.addEventListener('abort', () => runtime.upstreamCalls.abortAll(new Error('the gateway is shutting down')), { once: true });
  runtime.metrics.observeWriter(runtime.writer);
  const rt = () => runtime;
  const stopGenAiMetrics = subscribeGenAiPrometheus(runtime.metrics);
  const keys = new KeyResolver(db, options.adminKey, redis ? new RedisKeyChangeNotifier(redis) : localKeyChanges);
  const healthSharing = redis ? new RedisHealthSharing(redis, runtime.health, app.log) : localHealth;

  // JSON only: any other content type (text/plain included) is a 415.
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

  app.decorateRequest('apiKey', null as unknown as ApiKey);
  installClientLimits(app, () => runtime.config.server);
  // Callback-style hooks: no promise per request on the hot path.
  app.addHook('onRequest', (req, reply, next) => {
    reply.header('x-request-id', req.id);
    next();
  });
  registerCors(app, config.server.cors);
  const routes = installRouteAuth(app, { keys, metricsAuth: () => runtime.config.server.metrics_auth });
  app.addHook('onResponse', (req, reply, next) => {
    if ((req.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.('info') !== false) req.log.info({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
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

  // A known path with a wrong method is a 405, not a 404.
  const allowed: Record<string, string> = {
    '/v1/chat/completions': 'POST', '/v1/completions': 'POST', '/v1/messages': 'POST', '/v1/messages/count_tokens': 'POST', '/v1/responses': 'POST', '/v1/embeddings': 'POST', '/v1/models': 'GET', '/v1/generation': 'GET',
    '/v1/generations': 'GET', '/v1/usage': 'GET', '/v1/key': 'GET', '/health': 'GET', '/ready': 'GET', '/metrics': 'GET',
  };
  for (const [url, method] of Object.entries(allowed)) {
    const others = (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).filter((m) => m !== method);
    const access = url.startsWith('/v1/') ? 'key' : url === '/metrics' ? 'metrics' : 'public';
    app.route({ method: [...others], url, config: { access }, handler: async () => { throw new GatewayError('method_not_allowed', `use ${method} for ${url}`); } });
  }
  app.get('/health', { config: { access: 'public' } }, async () => ({ status: 'ok' }));
  app.get('/metrics', { config: { access: 'metrics' } }, async (_req, reply) => {
    reply.type(runtime.metrics.registry.contentType);
    runtime.metrics.droppedSpans.set(options.telemetry?.droppedSpans() ?? 0);
    return runtime.metrics.registry.metrics();
  });
  app.get('/ready', { config: { access: 'public' } }, async (_req, reply) => {
    if (!(await runtime.limits.ping())) return reply.code(503).send({ status: 'not ready', reason: 'the limit store (OP_REDIS_URL) cannot be reached' });
    const local = localModelsNotReady(runtime.config);
    if (local) return reply.code(503).send({ status: 'not ready', reason: local });
    const records = runtime.writer.problem;
    if (records !== null) return reply.code(503).send({ status: 'not ready', reason: records });
    try {
      await sql`select 1`.execute(db);
    } catch (err) {
      const e = describeWriteError(err);
      return reply.code(503).send({ status: 'not ready', reason: `the database cannot be reached: ${e.code}: ${e.message}` });
    }
    if (runtime.catalog.empty) return reply.code(200).send({ status: 'ready', warning: 'no models configured' });
    return { status: 'ready', models: runtime.catalog.models.size };
  });
  registerGenerateRoutes(app, rt);
  registerCountTokensRoute(app, rt);
  registerResponseRoutes(app, rt);
  registerModelRoutes(app, rt);
  registerGenerationRoutes(app, rt, db);
  registerUsageRoutes(app, rt, db);
  registerKeyRoutes(app, rt, db, keys);
  registerDashboard(app);
  const stopPurge = options.purgeIntervalMs === 0 ? async () => {} : startRetentionPurge(db, app.log, options.purgeIntervalMs ?? 3_600_000, fleetLease(db, 'retention-purge'));

  return {
    app,
    routes,
    runtime: rt,
    reload(loaded) {
      config = loaded.config;
      runtime.config = config;
      runtime.catalog = buildCatalog(config);
      runtime.adapters.clear();
      runtime.health.settings = healthSettings(config);
      runtime.writer.configure(config.records);
      // New pools pick up changed providers; the old ones close once their calls finish.
      const oldPools = runtime.pools;
      runtime.pools = new UpstreamPools(observePoolWait);
      void oldPools.close();
    },
    async close() {
      await stopPurge();
      healthSharing.close();
      await app.close();
      await runtime.writer.close();
      await runtime.responses.close();
      await runtime.pools.close();
      await runtime.limits.close();
      stopGenAiMetrics();
      await runtime.cache.close();
      await options.telemetry?.shutdown();
      await redis?.close();
    },
  };
}
