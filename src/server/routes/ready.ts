import type { FastifyInstance } from 'fastify';
import { sql, type Kysely } from 'kysely';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { localModelsNotReady } from '../../providers/local/local-model-files.js';
import { describeWriteError } from '../../store/record-guard.js';
import type { Database } from '../../store/schema.js';
import { describeOverload, type Overload } from '../overload.js';

/**
 * `GET /ready`: readiness, public. 503 `{status: "not ready", reason: "overloaded", overload:
 * {reason, value, limit}, message}` while a `server.overload` threshold is passed (checked first,
 * without I/O, so a balancer sends new traffic elsewhere while the held streams finish); 503
 * `{status: "not ready", reason}` while the limit store
 * (`OP_REDIS_URL`) cannot be reached, a local model's files are missing, records (generations, MCP tool
 * calls) cannot be written, or the database does not answer; else 200 `{status: "ready", models: N}` (with a
 * `warning` when no model is configured).
 */
export function registerReadyRoute(app: FastifyInstance, rt: () => GatewayRuntime, db: Kysely<Database>, overload: Overload): void {
  app.get('/ready', { config: { access: 'public', ownsPath: true } }, async (_req, reply) => {
    const over = overload.state();
    if (over) return reply.code(503).send({ status: 'not ready', reason: 'overloaded', overload: over, message: describeOverload(over) });
    const runtime = rt();
    if (!(await runtime.limits.ping())) return reply.code(503).send({ status: 'not ready', reason: 'the limit store (OP_REDIS_URL) cannot be reached' });
    const local = localModelsNotReady(runtime.config);
    if (local) return reply.code(503).send({ status: 'not ready', reason: local });
    const records = runtime.writer.problem ?? runtime.mcpCalls.problem;
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
}
