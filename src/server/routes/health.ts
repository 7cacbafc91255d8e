import type { FastifyInstance } from 'fastify';

/** `GET /health`: liveness, public; answers while the process runs, whatever its dependencies. */
export function registerHealthRoute(app: FastifyInstance): void {
  app.get('/health', { config: { access: 'public', ownsPath: true } }, async () => ({ status: 'ok' }));
}
