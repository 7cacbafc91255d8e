import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import type { IngressRoute } from '../../ingress/registry.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { countTokensHandler } from './count-tokens.js';
import { generateHandler, routeConfig } from './generate.js';

type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * The resource and action of a custom-method path's wildcard (`openai/gpt-5:generateContent` →
 * `openai/gpt-5`, `generateContent`: the action follows the last `:`; a `models/` prefix is
 * taken off the resource).
 */
export function splitAction(wildcard: string): { resource: string; action: string } | undefined {
  const at = wildcard.lastIndexOf(':');
  if (at <= 0) return undefined;
  return { resource: wildcard.slice(0, at).replace(/^models\//, ''), action: wildcard.slice(at + 1) };
}

function handlerOf(rt: () => GatewayRuntime, route: IngressRoute): Handler {
  switch (route.operation) {
    case 'generate':
      return generateHandler(rt, route);
    case 'count-tokens':
      return countTokensHandler(rt, route);
    default:
      throw new Error(`${route.method} ${route.path}:${route.action}: operation ${route.operation} cannot be a custom method`);
  }
}

/**
 * Routes that declare an `action` (Google's custom methods, `POST /v1beta/models/{model}:{action}`):
 * one Fastify route per method and wildcard path, which splits the wildcard into the resource
 * (the model, slashes allowed) and the action, builds the operation's body from the client's
 * body and the URL (the route's `requestBody`), and runs the action's handler. An unknown
 * action is a 404 `not_found`.
 */
export function registerCustomMethodRoutes(app: FastifyInstance, rt: () => GatewayRuntime, routes: readonly IngressRoute[]): void {
  const groups = new Map<string, IngressRoute[]>();
  for (const r of routes) {
    const k = `${r.method} ${r.path}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  for (const group of groups.values()) {
    const first = group[0]!;
    const actions = new Map(group.map((r) => [r.action!, { route: r, handler: handlerOf(rt, r) }]));
    app.route({
      method: first.method,
      url: first.path,
      // Generation work: counted in flight and refused while overloaded (overload.ts).
      config: { ...routeConfig(first), admission: group.some((r) => r.operation === 'generate') },
      handler: (req, reply) => {
        const wildcard = (req.params as Record<string, string>)['*'] ?? '';
        const split = splitAction(wildcard);
        const entry = split && actions.get(split.action);
        if (!split || !entry) throw new GatewayError('not_found', `no method ${JSON.stringify(split?.action ?? wildcard)} on ${first.path.slice(0, -1)}…; known: ${[...actions.keys()].join(', ')}`);
        if (entry.route.requestBody) req.body = entry.route.requestBody(req.body, { ...split, query: req.query as Record<string, unknown> });
        return entry.handler(req, reply);
      },
    });
  }
}
