import type { EndUser } from '../../store/end-users.js';
import type { LogFn } from 'pino';
import type { GatewayConfig } from '../../config/schema.js';
import { adapterFor } from '../../providers/registry.js';
import type { ProviderAdapter } from '../../providers/types.js';
import type { UpstreamPools } from '../../upstream/upstream-pools.js';
import type { LiveUpstreamCalls } from '../../upstream/upstream-exchange.js';
import type { Catalog } from '../../routing/catalog.js';
import type { HealthRegistry } from '../../routing/endpoint-health.js';
import type { LimitStore } from '../../limits/limit-store.js';
import type { RedisConnection } from '../../redis/redis-connection.js';
import type { ResponseCacheStore } from '../../cache/response-cache-store.js';
import type { GatewayMetrics } from './metrics.js';
import type { GenerationWriter } from '../../store/generation-writer.js';
import type { StoredResponseStore } from '../../store/stored-responses.js';
import type { McpGateway } from '../../mcp/mcp-gateway.js';
import type { McpCallWriter } from '../../store/mcp-call-writer.js';
import type { AlertSink } from '../../alerts/alert-dispatcher.js';

/** What the pipeline logs through: pino's level methods (no Fastify type below server/). */
export interface GatewayLog {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
}

/** Everything a request needs from the running gateway. `config`/`catalog` change on reload. */
export interface GatewayRuntime {
  config: Readonly<GatewayConfig>;
  catalog: Catalog;
  pools: UpstreamPools;
  writer: GenerationWriter;
  /** The process log (pino's methods; the server passes Fastify's logger). */
  log: GatewayLog;
  adapters: Map<string, ProviderAdapter>;
  health: HealthRegistry;
  /** Uniform [0, 1) source for routing's weighted choice. */
  random: () => number;
  /** Streams and requests in flight (for drain logs). */
  inFlight: number;
  /** The process's one Redis connection (`OP_REDIS_URL`), shared by every Redis-backed store; unset without Redis. */
  redis: RedisConnection | undefined;
  /** Key credit and rate-limit state (in-process, or Redis). */
  limits: LimitStore;
  metrics: GatewayMetrics;
  /** The exact response cache (Redis, or the embedded database). */
  cache: ResponseCacheStore;
  /** Aborted when the drain time of a shutdown runs out: streams still open end with an error chunk. */
  shutdown: AbortController;
  /** The upstream calls in flight; all are cut when `shutdown` aborts. */
  upstreamCalls: LiveUpstreamCalls;
  /** A key's settled spend since `periodStart` (unix ms) from the database, in picodollars: store/usage-queries.ts `loadSpentSince`. */
  loadSpent: (keyId: string, periodStart: number) => Promise<bigint>;
  /** A team's settled spend since `periodStart` (the sum of its keys'), in picodollars: store/teams.ts `loadTeamSpentSince`. */
  loadTeamSpent: (teamId: string, periodStart: number) => Promise<bigint>;
  /** An end user's settled spend with a key since `periodStart`, in picodollars: store/end-users.ts `loadEndUserSpentSince`. */
  loadEndUserSpent: (keyId: string, endUser: EndUser, periodStart: number) => Promise<bigint>;
  /** Responses API objects kept for `GET /v1/responses/{id}` and `previous_response_id`. */
  responses: StoredResponseStore;
  /** The MCP gateway over `mcp_servers` (`/mcp`, docs/mcp.md): its sessions and upstream connections. */
  mcp: McpGateway;
  /** The MCP tool-call records (`mcp_tool_calls`), written off the call path (server/mcp-call-observer.ts queues them). */
  mcpCalls: McpCallWriter;
  /** Alerts (src/alerts/): settled credit limits are noted here, off the request path. */
  alerts: AlertSink;
}

/** The adapter of a provider, cached per provider id. */
export function runtimeAdapter(rt: GatewayRuntime, provider: GatewayConfig['providers'][number]): ProviderAdapter {
  let a = rt.adapters.get(provider.id);
  if (!a) {
    a = adapterFor(provider);
    rt.adapters.set(provider.id, a);
  }
  return a;
}
