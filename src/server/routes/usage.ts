import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { GatewayRuntime } from '../../gateway/runtime.js';
import type { Database } from '../../store/schema.js';

/** `GET /v1/usage` and `GET /v1/generations` (work in progress). */
export function registerUsageRoutes(_app: FastifyInstance, _rt: () => GatewayRuntime, _db: Kysely<Database>): void {}
