import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';
import type { Kysely } from 'kysely';
import type { LoadedConfig } from '../config/load.js';
import type { GatewayConfig } from '../config/schema.js';
import { DatabaseResponseCacheStore } from '../cache/database-response-cache-store.js';
import { RedisResponseCacheStore } from '../cache/redis-response-cache-store.js';
import { MemoryLimitStore } from '../limits/memory-limit-store.js';
import { RedisLimitStore } from '../limits/redis-limit-store.js';
import { GatewayMetrics } from '../pipeline/state/metrics.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { buildCatalog } from '../routing/catalog.js';
import { HealthRegistry, type HealthSettings } from '../routing/endpoint-health.js';
import { localHealth, RedisHealthSharing } from '../routing/health-sharing.js';
import { fleetLease } from '../store/fleet-lease.js';
import { BatchRunner } from '../pipeline/batches/batch-runner.js';
import { GenerationWriter } from '../store/generation-writer.js';
import { localKeyChanges, RedisKeyChangeNotifier } from '../store/key-change-notifier.js';
import { startRetentionPurge } from '../store/retention-purge.js';
import type { Database } from '../store/schema.js';
import { StoredResponseStore } from '../store/stored-responses.js';
import { loadSpentSince } from '../store/usage-queries.js';
import { loadTeamSpentSince } from '../store/teams.js';
import { loadEndUserSpentSince } from '../store/end-users.js';
import { subscribeGenAiPrometheus } from '../telemetry/prometheus-genai.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { UpstreamPools } from '../upstream/upstream-pools.js';
import { LiveUpstreamCalls } from '../upstream/upstream-exchange.js';
import { McpGateway } from '../mcp/mcp-gateway.js';
import type { SecretBox } from '../util/secret-box.js';
import { McpCallWriter } from '../store/mcp-call-writer.js';
import { mcpCallObserver } from './mcp-call-observer.js';
import { AlertDispatcher } from '../alerts/alert-dispatcher.js';
import { loadCreditSpent } from '../pipeline/stages/admit.js';
import { generationEnd, type GenerationEndEvent } from '../pipeline/state/events.js';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { KeyResolver } from './auth.js';
import { CatalogSync } from './catalog-sync.js';

/** Options of {@link buildGateway} (server/app.ts). */
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
  /** `OP_CATALOG_SECRET_KEY`: seals the secrets of providers entered through the catalog API (none: such providers are refused). */
  secretBox?: SecretBox | undefined;
  /** How often each process checks the stored catalog's revision, in ms (0 = never; default 500 ms without Redis, 10 s with it as a safety net for a lost notice). */
  catalogPollMs?: number;
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

/** What the gateway runs on, apart from its HTTP server: built by {@link buildRuntime}. */
export interface BuiltRuntime {
  runtime: GatewayRuntime;
  /** The one Redis connection (`OP_REDIS_URL`), to be waited for before the server listens. */
  redis: RedisConnection | undefined;
  /** Client keys, with change notices shared through Redis when there is one. */
  keys: KeyResolver;
  /** Alerts: events recorded once across the fleet, delivered to webhooks. */
  alerts: AlertDispatcher;
  /**
   * A new validated config file: merged with the stored catalog entries (catalog-sync.ts), then
   * in force (catalog, health settings, record settings, new pools).
   * @throws ConfigError when the file and the stored entries do not validate together.
   */
  reload(loaded: LoadedConfig): void;
  /** The providers and models entered through the API, merged over the file's. */
  catalog: CatalogSync;
  /** The batch worker pool of this process (pipeline/batches/), started when the server is ready. */
  batches: BatchRunner;
  /** Stop the background work (retention purge, health sharing, MCP sessions and upstreams): before the server closes. */
  stopBackground(): Promise<void>;
  /** Flush records and close stores, pools, telemetry and Redis: after the server closed. */
  close(): Promise<void>;
}

/**
 * Build the runtime every request reads (GatewayRuntime: config, catalog, pools, record writer,
 * stores, limits, cache, metrics) and the background work around it (retention purge, health
 * sharing, GenAI metrics), from the options; `log` is the server's logger.
 */
export function buildRuntime(options: GatewayOptions, log: FastifyBaseLogger): BuiltRuntime {
  const { db } = options;
  const config = options.loaded.config;
  const redis = options.redisUrl ? new RedisConnection(options.redisUrl, { commandTimeoutMs: config.redis.command_timeout_ms, connectTimeoutMs: config.redis.connect_timeout_ms }, log, options.redisPrefix) : undefined;
  const observePoolWait = (provider: string, ms: number) => runtime.metrics.poolWait.observe({ provider }, ms / 1000);
  const cacheBounds = { maxEntryBytes: config.cache.max_entry_bytes, maxTotalBytes: config.cache.max_total_bytes };
  // Alerts: a credit limit's spend is the limit store's (exact across replicas with Redis);
  // without Redis each process's store knows only its own settlements, so the records count too.
  const alerts = new AlertDispatcher({
    db,
    config: () => runtime.config.alerts,
    log,
    recordsProblem: () => runtime.writer.problem,
    spent: async (c) => {
      const credit = { level: c.level, id: c.id, limitPico: c.limitPico, periodStart: c.periodStart };
      const load = () => loadCreditSpent(runtime, credit);
      const own = await runtime.limits.spent(c.id, c.periodStart, load);
      if (redis) return own;
      const written = await load();
      return written > own ? written : own;
    },
  });
  const runtime: GatewayRuntime = {
    config,
    catalog: buildCatalog(config),
    pools: new UpstreamPools(observePoolWait),
    writer: new GenerationWriter(db, log, config.records.flush_interval_ms),
    log,
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
    responses: new StoredResponseStore(db, log),
    loadSpent: (keyId, periodStart) => loadSpentSince(db, keyId, periodStart),
    loadTeamSpent: (teamId, periodStart) => loadTeamSpentSince(db, teamId, periodStart),
    loadEndUserSpent: (keyId, endUser, periodStart) => loadEndUserSpentSince(db, keyId, endUser, periodStart),
    mcp: new McpGateway(config.mcp_servers, { warn: (message) => log.warn(message), observer: mcpCallObserver(() => runtime) }),
    mcpCalls: new McpCallWriter(db, log, config.records.flush_interval_ms),
    alerts,
  };
  runtime.health.onCircuit = (endpoint, state) => alerts.breaker(endpoint, state);
  // A model's error rate (alerts.error_rate): each generation of this gateway that a catalog model served, off its end event.
  const onGenerationEnd = (message: unknown) => {
    const { draft, metrics } = message as GenerationEndEvent;
    if (metrics !== runtime.metrics || draft.status === 'cancelled' || runtime.config.alerts.error_rate === null) return;
    // The model that served it, or that its last attempt tried (a failure has no served model).
    const model = draft.servedModel ?? draft.attempts[draft.attempts.length - 1]?.model;
    if (model !== undefined) alerts.noteOutcome(model, draft.status === 'error' && draft.httpStatus >= 500);
  };
  subscribe(generationEnd.name as string, onGenerationEnd);
  alerts.start();
  runtime.writer.configure(config.records);
  runtime.shutdown.signal.addEventListener('abort', () => runtime.upstreamCalls.abortAll(new Error('the gateway is shutting down')), { once: true });
  runtime.metrics.observeWriter(runtime.writer);
  runtime.mcpCalls.configure(config.records);
  runtime.metrics.observeMcpWriter(runtime.mcpCalls);
  const stopGenAiMetrics = subscribeGenAiPrometheus(runtime.metrics);
  const keys = new KeyResolver(db, options.adminKey, redis ? new RedisKeyChangeNotifier(redis) : localKeyChanges);
  // A key's allowed_tools may have changed: MCP sessions are told to list their tools again.
  keys.onKeysChanged(() => runtime.mcp.keysChanged());
  const healthSharing = redis ? new RedisHealthSharing(redis, runtime.health, log) : localHealth;
  const stopPurge = options.purgeIntervalMs === 0 ? async () => {} : startRetentionPurge(db, log, options.purgeIntervalMs ?? 3_600_000, fleetLease(db, 'retention-purge'), () => ({ auditDays: runtime.config.audit.retention_days, alertDays: runtime.config.alerts.retention_days }), config.batches.result_retention_days);

  /** Put a validated (merged) config in force: catalog, health settings, record settings, new pools. */
  const apply = (loaded: LoadedConfig) => {
    const next = loaded.config;
    runtime.config = next;
    runtime.catalog = buildCatalog(next);
    runtime.adapters.clear();
    runtime.health.settings = healthSettings(next);
    runtime.writer.configure(next.records);
    runtime.mcpCalls.configure(next.records);
    runtime.mcp.reload(next.mcp_servers);
    // New pools pick up changed providers; the old ones close once their calls finish.
    const oldPools = runtime.pools;
    runtime.pools = new UpstreamPools(observePoolWait);
    void oldPools.close();
  };
  const catalog = new CatalogSync(
    { db, box: options.secretBox, log, apply, changes: redis ? new RedisKeyChangeNotifier(redis, 'catalog') : localKeyChanges, pollMs: options.catalogPollMs ?? (redis ? 10_000 : 500) },
    options.loaded,
  );

  const batches = new BatchRunner(() => runtime, db);

  return {
    runtime,
    redis,
    keys,
    catalog,
    alerts,
    reload: (loaded) => catalog.setFile(loaded),
    batches,
    async stopBackground() {
      catalog.stop();
      // Before the server closes: MCP sessions hold open GET streams (and stdio children).
      await runtime.mcp.close();
      // The lines in flight end (their results and records written) while the pools are still open.
      await batches.close();
      await stopPurge();
      unsubscribe(generationEnd.name as string, onGenerationEnd);
      await alerts.close();
      healthSharing.close();
    },
    async close() {
      await runtime.writer.close();
      await runtime.mcpCalls.close();
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
