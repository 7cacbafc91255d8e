import type { FastifyInstance } from 'fastify';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import type { Telemetry } from '../../telemetry/telemetry.js';

/**
 * `GET /metrics`: the Prometheus text exposition of the gateway's metrics (access `metrics`:
 * public unless `server.metrics_auth`, then the admin key only); the OpenTelemetry export's
 * dropped spans are read at each scrape.
 */
export function registerMetricsRoute(app: FastifyInstance, rt: () => GatewayRuntime, telemetry: Telemetry | undefined): void {
  app.get('/metrics', { config: { access: 'metrics', ownsPath: true } }, async (_req, reply) => {
    const { metrics } = rt();
    reply.type(metrics.registry.contentType);
    metrics.droppedSpans.set(telemetry?.droppedSpans() ?? 0);
    return metrics.registry.metrics();
  });
}
