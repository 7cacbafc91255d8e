import { PromptSize } from '../../accounting/estimate-tokens.js';
import { checkBodyBounds } from '../../ingress/body-bounds.js';
import { convertMessagesToChat } from '../../ingress/anthropic/messages/convert-messages-to-chat.js';
import { parseCountTokensRequest } from '../../ingress/anthropic/messages/messages-request-schema.js';
import type { UpstreamCall } from '../../providers/types.js';
import type { IngressAdapter } from '../../ingress/types.js';
import type { ChatRequest } from '../../core/chat-types.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { UpstreamExchange } from '../../upstream/upstream-exchange.js';
import { resolveAliases } from '../../routing/catalog.js';
import { resolveModelNames } from '../../routing/model-names.js';
import { planRoute } from '../../routing/route-plan.js';
import type { ApiKey } from '../../store/keys.js';
import { admitWithoutCredit } from './admit.js';
import { MAX_ERROR_BODY } from '../attempt/attempt.js';
import { runtimeAdapter, type GatewayRuntime } from '../state/runtime.js';

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

/** Total time of an upstream count when the endpoint sets no `timeouts.total_ms`, in ms. */
const DEFAULT_COUNT_TIMEOUT_MS = 30_000;

/**
 * Count the input tokens of a Messages request (`POST /v1/messages/count_tokens`) — or of the
 * request of another API that declares its own `countTokens` (Gemini's `:countTokens`: its
 * request, its native lane's count) — for the
 * endpoint the router would try first: its own count when its provider's Messages native lane
 * counts (`countTokens`: an `anthropic` endpoint's `POST …/v1/messages/count_tokens`, the
 * client's `anthropic-*` headers forwarded),
 * otherwise — or when that call fails — the gateway's estimate (o200k tokenizer over the
 * translated request). Model names resolve as on `/v1/messages` (aliases, presets, variants
 * such as `:floor`); the request counts against the key's rate limits (`x-ratelimit-*`
 * headers into `rateHeaders`, also when it is refused). No generation is recorded.
 * @throws GatewayError `invalid_request` (bad body, list bounds), `model_not_allowed`,
 *   `rate_limited`, `no_endpoint_available` …
 * @see https://docs.anthropic.com/en/api/messages-count-tokens
 */
export async function countMessagesTokens(
  rt: GatewayRuntime, body: unknown, key: ApiKey, headers: Readonly<Record<string, string>>, rateHeaders: Record<string, string>, ingress?: IngressAdapter,
): Promise<TokenCount> {
  const server = rt.config.server;
  const own = ingress?.output === 'generation' ? ingress.countTokens : undefined;
  checkBodyBounds(body, own ? ingress!.api : 'messages', { maxMessages: server.max_messages, maxContentParts: server.max_content_parts });
  let req: { model: string };
  let converted: ChatRequest;
  if (own) {
    req = own.parse(body) as { model: string };
    converted = ingress!.toChat(req);
  } else {
    const messages = parseCountTokensRequest(body);
    req = messages;
    converted = convertMessagesToChat(messages).chat;
  }
  const chat = resolveAliases(rt.catalog, { ...converted, stream: false });
  resolveModelNames(chat, rt.catalog, rt.config);
  await admitWithoutCredit(rt, key, chat, rateHeaders);
  const prompt = new PromptSize(chat.messages, chat.tools);
  const planned = planRoute(chat, { catalog: rt.catalog, health: rt.health, random: rt.random }, prompt).endpoints[0]!.target;
  // A provider with `api_keys`: counted with one of its keys not cooling, by weight.
  const first = (planned.credentials === undefined ? undefined : rt.health.credentials.pick(planned.credentials, rt.random))?.target ?? planned;
  const lane = runtimeAdapter(rt, first.provider).native[own ? ingress!.api : 'messages'];
  const count = lane?.countTokens;
  if (count !== undefined) {
    try {
      const counted = await upstreamCount(rt, first, await count({ ...req, model: chat.model }, first, headers), lane?.readCount);
      if (counted !== undefined) return { input_tokens: counted, source: 'upstream', endpoint: first.id };
      rt.log.warn({ endpoint: first.id }, 'count_tokens: the upstream answer has no input_tokens; using the estimate');
    } catch (err) {
      rt.log.warn({ endpoint: first.id, err: (err as Error).message }, 'count_tokens: the upstream count failed; using the estimate');
    }
  }
  return { input_tokens: prompt.estimate(), source: 'estimated', endpoint: first.id };
}

/**
 * The upstream's `input_tokens` for one count call, made like a generation's call: a connection
 * slot of the provider, the endpoint's timeouts (`total_ms`, else 30 s), and the body read at most
 * `server.upstream_max_response_bytes` (a larger one is refused and its connection closed).
 * @returns undefined when the answer holds no numeric `input_tokens` (or no count the lane's
 *   `readCount` finds: Bedrock's `inputTokens`).
 * @throws GatewayError (upstream error, oversized body), transport errors.
 */
async function upstreamCount(rt: GatewayRuntime, target: ResolvedEndpoint, call: UpstreamCall, readCount?: (body: unknown) => number | undefined): Promise<number | undefined> {
  const slot = await rt.pools.acquire(target.provider, target.timeouts.pool_wait_ms, () => [rt.shutdown.signal]);
  const res = new UpstreamExchange(call, rt.pools.agentFor(target.provider), target.timeouts, rt.upstreamCalls);
  const totalMs = target.timeouts.total_ms > 0 ? target.timeouts.total_ms : DEFAULT_COUNT_TIMEOUT_MS;
  const timer = setTimeout(() => res.abort(new Error(`no count within ${totalMs} ms`)), totalMs);
  try {
    await res.head();
    if (res.statusCode >= 300) throw runtimeAdapter(rt, target.provider).parseErrorResponse(res.statusCode, res.headers, await res.cappedText(MAX_ERROR_BODY));
    const json = JSON.parse(await res.text(rt.config.server.upstream_max_response_bytes, target.provider.id)) as { input_tokens?: unknown } | null;
    if (readCount) return readCount(json);
    return typeof json?.input_tokens === 'number' ? json.input_tokens : undefined;
  } finally {
    clearTimeout(timer);
    slot.release();
  }
}
