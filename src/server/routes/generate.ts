import type { FastifyInstance } from 'fastify';
import { INGRESS_ADAPTERS } from '../../ingress/registry.js';
import type { GatewayRuntime } from '../../pipeline/runtime.js';
import { serveGeneration } from '../../pipeline/serve-generation.js';
import { FastifyClientSink } from '../fastify-client-sink.js';

/**
 * One POST route per client API of the ingress registry (`/v1/chat/completions`,
 * `/v1/completions`, …): the request goes to the pipeline with its adapter, the authenticated
 * key, and a sink over the reply.
 */
/** The `x-op-cache` request header (the first value when repeated). */
function cacheHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function registerGenerateRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  for (const ingress of INGRESS_ADAPTERS) {
    // The headers the API forwards upstream and those that may name the session.
    const wanted = ingress.output === 'generation' ? [...(ingress.forwardHeaders ?? []), ...(ingress.sessionHeaders ?? [])] : [];
    const names = wanted.length > 0 ? wanted : undefined;
    app.post(ingress.path, (req, reply) => serveGeneration(rt(), ingress, req.body, req.apiKey, req.id, new FastifyClientSink(reply), names && pickHeaders(req.headers, names), cacheHeader(req.headers['x-op-cache'])));
  }
}

/** The named request headers that are present (several values joined with commas). */
export function pickHeaders(headers: Record<string, string | string[] | undefined>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const v = headers[name];
    if (v !== undefined) out[name] = Array.isArray(v) ? v.join(',') : v;
  }
  return out;
}
