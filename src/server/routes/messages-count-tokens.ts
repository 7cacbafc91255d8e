import type { FastifyInstance } from 'fastify';
import { FORWARDED_HEADERS } from '../../providers/anthropic/native/messages.js';
import { countMessagesTokens } from '../../pipeline/stages/count-tokens.js';
import type { GatewayRuntime } from '../../pipeline/state/runtime.js';
import { pickHeaders } from './generate.js';

/**
 * `POST /v1/messages/count_tokens` (Anthropic): `{"input_tokens": N}`; the header
 * `x-op-token-count` says whether the upstream counted (`upstream`) or the gateway estimated
 * (`estimated`), `x-ratelimit-*` the key's rate-limit state (a 429 carries them too). Errors
 * use Anthropic's envelope (send-error.ts picks it by path).
 */
export function registerCountTokensRoute(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.post('/v1/messages/count_tokens', async (req, reply) => {
    const rateHeaders: Record<string, string> = {};
    try {
      const count = await countMessagesTokens(rt(), req.body, req.apiKey, pickHeaders(req.headers, FORWARDED_HEADERS), rateHeaders);
      reply.header('x-op-token-count', count.source).header('x-op-token-count-endpoint', count.endpoint);
      return { input_tokens: count.input_tokens };
    } finally {
      reply.headers(rateHeaders);
    }
  });
}
