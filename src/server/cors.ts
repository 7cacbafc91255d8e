import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import type { ServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { sendError } from './send-error.js';

/** Response headers a browser app may read (request correlation, generation id, backoff). */
const EXPOSED_HEADERS = ['x-request-id', 'x-op-generation-id', 'x-generation-id', 'retry-after', 'x-op-cache'];

/**
 * Cross-origin access for browser apps (`server.cors`). Off when unset: no CORS headers, and an
 * `OPTIONS` request is a plain 404. When set, listed origins (or `*`) get
 * `Access-Control-Allow-Origin` on every answer, errors included, and preflights are answered
 * 204 before authentication (a browser never sends a key with them). Credentials (cookies) are
 * never allowed: the API authenticates with a bearer key the app sends itself.
 * Read once at start; a config reload does not change it.
 * @see https://fetch.spec.whatwg.org/#http-cors-protocol
 */
export function registerCors(app: FastifyInstance, cors: ServerConfig['cors']): void {
  if (!cors) return;
  const origins = cors.allowed_origins;
  // An OPTIONS that is not a preflight (no Origin or no Access-Control-Request-Method) gets the
  // gateway's JSON error envelope, not the CORS plugin's plain-text 400. Root hooks run before the
  // plugin's, which is registered later.
  app.addHook('onRequest', (req, reply, next) => {
    if (req.method !== 'OPTIONS' || (req.headers.origin && req.headers['access-control-request-method'])) return next();
    sendError(reply, new GatewayError('invalid_request', 'an OPTIONS request is a CORS preflight: it needs the Origin and Access-Control-Request-Method headers'), req.id);
  });
  app.register(fastifyCors, {
    origin: origins.includes('*') ? '*' : origins,
    credentials: false,
    methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: cors.max_age_s,
    // Answer preflights in the first hook, before the route's authentication.
    hook: 'onRequest',
  });
}
