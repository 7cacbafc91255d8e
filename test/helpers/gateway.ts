import type { AddressInfo } from 'node:net';
import { parseConfig } from '../../src/config/load.js';
import { buildGateway, type Gateway } from '../../src/server/app.js';
import type { OpenDatabase } from '../../src/store/database.js';
import { createKey } from '../../src/store/keys.js';
import { migrate } from '../../src/store/migrations.js';
import { createTestDatabase } from './test-database.js';
import type { Telemetry } from '../../src/telemetry/telemetry.js';
import { randomId } from '../../src/util/ids.js';
import { gatewayLogStream } from './test-output.js';

/**
 * A gateway running in this process on 127.0.0.1, port 0, with its own database: a SQLite file,
 * or a fresh PostgreSQL schema when `OP_TEST_DATABASE_URL` is set (see test-database.ts). Its
 * logs (level `OP_TEST_LOG_LEVEL`, default info) go to test-artifacts/logs/, printed only when
 * a test of the file fails (see test-output.ts).
 */
export interface TestGateway {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** `http://127.0.0.1:PORT/v1`, for SDK `baseURL`. */
  baseURL: string;
  adminKey: string;
  gateway: Gateway;
  store: OpenDatabase;
  /** The URL of its database (for another process, such as the CLI: `OP_DATABASE_URL`). */
  databaseUrl: string;
  /** Create a client key; returns its secret and id. */
  createKey(name?: string): Promise<{ secret: string; id: string }>;
  /** Flush queued generation records to the database. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Minimal config for one OpenAI-compatible upstream serving one model. */
export function oneModelConfig(upstreamUrl: string, extra: { endpoint?: Record<string, unknown>; model?: Record<string, unknown>; provider?: Record<string, unknown>; root?: Record<string, unknown> } = {}) {
  return {
    providers: [{ id: 'up', kind: 'openai', base_url: upstreamUrl, api_key: 'sk-upstream-secret', ...extra.provider }],
    models: [
      {
        id: 'test/model',
        name: 'Test model',
        context_length: 8192,
        ...extra.model,
        endpoints: [
          {
            provider: 'up',
            upstream_model: 'upstream-model',
            pricing: { prompt: 1, completion: 2 },
            supported_parameters: ['temperature', 'top_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'tools', 'tool_choice', 'response_format'],
            ...extra.endpoint,
          },
        ],
      },
    ],
    ...extra.root,
  };
}

/** Start a gateway with a config object (validated like a file). */
/**
 * Routing health defaults for tests: tests share one gateway across many failures, so the
 * circuit breaker and rate-limit cooldowns are off unless a test's config sets `routing`.
 */
const TEST_ROUTING = { circuit_breaker: { failure_threshold: 1000 }, retry_after_cap_ms: 0, recent_failure_ms: 0 };

/**
 * The event-loop delay guard (`server.overload.max_event_loop_delay_ms`, default 1 s) is off in
 * tests unless a test's config sets `server.overload`: a test process on a loaded machine can
 * see a mean loop delay over 1 s and would refuse with 503 gateway_overloaded what it tests.
 */
function withTestOverload(config: unknown): unknown {
  if (!config || typeof config !== 'object') return config;
  const server = (config as { server?: Record<string, unknown> }).server ?? {};
  if ('overload' in server) return config;
  return { ...config, server: { ...server, overload: { max_event_loop_delay_ms: 0 } } };
}

export async function startGateway(config: unknown = {}, options: { random?: () => number; redisUrl?: string | undefined; telemetry?: Telemetry | undefined } = {}): Promise<TestGateway> {
  const withRouting = withTestOverload(config && typeof config === 'object' && !('routing' in config) ? { ...config, routing: TEST_ROUTING } : config);
  const database = await createTestDatabase();
  const store = database.open();
  await migrate(store.db);
  const adminKey = 'admin-test-key';
  const gateway = buildGateway({ loaded: { config: parseConfig(withRouting, 'test config'), source: 'test' }, db: store.db, adminKey, logger: { level: process.env.OP_TEST_LOG_LEVEL ?? 'info', stream: gatewayLogStream() }, random: options.random, redisUrl: options.redisUrl, telemetry: options.telemetry, redisPrefix: `op-test:${randomId(12)}:`, purgeIntervalMs: 0 });
  await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (gateway.app.server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    baseURL: `${origin}/v1`,
    adminKey,
    gateway,
    store,
    databaseUrl: database.url,
    async createKey(name = 'test') {
      const { key, secret } = await createKey(store.db, name);
      return { secret, id: key.id };
    },
    flush: () => gateway.runtime().writer.flush(),
    async close() {
      await gateway.close();
      await store.close();
      await database.drop();
    },
  };
}
