import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isStaticPath, type IngressRoute } from '../../ingress/registry.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { serveGeneration } from '../../pipeline/stages/serve-generation.js';
import { serveMcpToolLoop } from '../../pipeline/stages/mcp-tool-loop.js';
import { FastifyClientSink } from '../fastify-client-sink.js';
import { REPEATED_HEADER } from '../../ingress/gateway-fields.js';

/**
 * A `generate` route of the ingress registry (`POST /v1/chat/completions`, `/v1/completions`,
 * …): the request goes to the pipeline with its adapter, the authenticated key, and a sink over
 * the reply.
 */
export function registerGenerateRoute(app: FastifyInstance, rt: () => GatewayRuntime, route: IngressRoute): void {
  app.route({
    method: route.method,
    url: route.path,
    // Generation work: counted in flight and refused while overloaded (overload.ts).
    config: { ...routeConfig(route), admission: true },
    handler: generateHandler(rt, route),
  });
}

/** The handler of a `generate` route: the pipeline with the route's adapter. */
export function generateHandler(rt: () => GatewayRuntime, route: IngressRoute) {
  const { ingress } = route;
  // The headers the API forwards upstream and those that may name the session.
  const forward = ingress.output === 'generation' ? (ingress.forwardHeaders ?? []) : [];
  const sessions = ingress.output === 'generation' ? (ingress.sessionHeaders ?? []) : [];
  const wantsHeaders = forward.length + sessions.length > 0;
  // Responses with `{"type": "mcp"}` tools: the gateway's tool loop, each model turn through the pipeline.
  const hostsMcpTools = ingress.output === 'generation' ? ingress.hostsMcpTools : undefined;
  return (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const headers = wantsHeaders ? pickHeaders(req.headers, forward) : undefined;
    // The raw header list is read only when a session header was sent.
    if (headers && sessions.some((n) => req.headers[n] !== undefined)) Object.assign(headers, pickSessionHeaders(req.raw.rawHeaders, sessions));
    if (hostsMcpTools?.(req.body) && ingress.output === 'generation') return serveMcpToolLoop(rt(), ingress, req.body as Record<string, unknown>, req.apiKey, req.id, new FastifyClientSink(reply), headers);
    // Node joins a repeated x-op-cache into one value, which matches neither true nor false and is ignored.
    return serveGeneration(rt(), ingress, req.body, req.apiKey, req.id, new FastifyClientSink(reply), headers, req.headers['x-op-cache'] as string | undefined, req.headers['x-op-user'] as string | undefined);
  };
}

/**
 * The Fastify route config of a declared API route: its access level, and `ownsPath` for a path
 * without parameters (the other methods answer 405, see method-not-allowed.ts).
 */
export function routeConfig(route: IngressRoute): { access: IngressRoute['access']; ownsPath: boolean; keyInQuery?: boolean } {
  const config: { access: IngressRoute['access']; ownsPath: boolean; keyInQuery?: boolean } = { access: route.access, ownsPath: isStaticPath(route.path) };
  if (route.keyInQuery) config.keyInQuery = true;
  return config;
}

/**
 * The session headers that are present, from the raw header list: each value decoded as UTF-8
 * (Node hands header bytes over as Latin-1; an invalid sequence becomes U+FFFD, which the
 * pipeline refuses), and the values of a header sent more than once joined with
 * {@link REPEATED_HEADER} so that the pipeline refuses them rather than merging two sessions.
 */
export function pickSessionHeaders(rawHeaders: readonly string[], names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!names.includes(name)) continue;
    const value = Buffer.from(rawHeaders[i + 1]!, 'latin1').toString('utf8');
    out[name] = out[name] === undefined ? value : `${out[name]}${REPEATED_HEADER}${value}`;
  }
  return out;
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
