import { PromptSize } from '../accounting/estimate-tokens.js';
import { GatewayError } from '../errors/gateway-error.js';
import { convertMessagesToChat } from '../ingress/anthropic/messages/convert-messages-to-chat.js';
import { parseCountTokensRequest } from '../ingress/anthropic/messages/messages-request-schema.js';
import { nativeCountTokensCall } from '../ingress/anthropic/messages/native-messages-call.js';
import { sendUpstream } from '../relay/upstream-client.js';
import { resolveAliases } from '../routing/catalog.js';
import { planRoute } from '../routing/plan.js';
import type { ApiKey } from '../store/keys.js';
import { MAX_ERROR_BODY, readCapped } from './attempt.js';
import { runtimeAdapter, type GatewayRuntime } from './runtime.js';

/** Where a token count came from: the upstream's own count, or the gateway's tokenizer. */
export type TokenCountSource = 'upstream' | 'estimated';

/** The answer of `POST /v1/messages/count_tokens`. */
export interface TokenCount {
  /** Input tokens of the request (tokens). */
  input_tokens: number;
  source: TokenCountSource;
  /** The endpoint that counted (`source: upstream`), or the model whose first endpoint would serve. */
  endpoint: string;
}

/**
 * Count the input tokens of a Messages request (`POST /v1/messages/count_tokens`) for the
 * endpoint the router would try first: an `anthropic` endpoint's own count
 * (`POST …/v1/messages/count_tokens` upstream, the client's `anthropic-*` headers forwarded),
 * otherwise — or when that call fails — the gateway's estimate (o200k tokenizer over the
 * translated request). No generation is recorded.
 * @throws GatewayError `invalid_request` (bad body), `model_not_allowed`, `no_endpoint_available` …
 * @see https://docs.anthropic.com/en/api/messages-count-tokens
 */
export async function countMessagesTokens(rt: GatewayRuntime, body: unknown, key: ApiKey, headers: Readonly<Record<string, string>>): Promise<TokenCount> {
  const req = parseCountTokensRequest(body);
  const chat = resolveAliases(rt.catalog, { ...convertMessagesToChat(req).chat, stream: false });
  const allowed = key.settings.allowed_models;
  if (allowed.length > 0 && !allowed.includes(chat.model)) {
    throw new GatewayError('model_not_allowed', `this key may not use model ${JSON.stringify(chat.model)}; allowed: ${allowed.join(', ')}`, { param: 'model' });
  }
  const prompt = new PromptSize(chat.messages, chat.tools);
  const first = planRoute(chat, { catalog: rt.catalog, health: rt.health, random: rt.random }, prompt).endpoints[0]!.target;
  if (first.provider.kind === 'anthropic') {
    const call = nativeCountTokensCall({ ...req, model: chat.model }, first, headers);
    try {
      const res = await sendUpstream(call, rt.pools.agentFor(first.provider), first.timeouts, AbortSignal.timeout(first.timeouts.total_ms > 0 ? first.timeouts.total_ms : 30_000));
      if (res.statusCode >= 300) throw runtimeAdapter(rt, first.provider).parseErrorResponse(res.statusCode, res.headers, await readCapped(res.body, MAX_ERROR_BODY));
      const json = (await res.body.json()) as { input_tokens?: unknown };
      if (typeof json.input_tokens === 'number') return { input_tokens: json.input_tokens, source: 'upstream', endpoint: first.id };
      rt.log.warn({ endpoint: first.id }, 'count_tokens: the upstream answer has no input_tokens; using the estimate');
    } catch (err) {
      rt.log.warn({ endpoint: first.id, err: (err as Error).message }, 'count_tokens: the upstream count failed; using the estimate');
    }
  }
  return { input_tokens: prompt.estimate(), source: 'estimated', endpoint: first.id };
}
