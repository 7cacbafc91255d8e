import { cacheKey, cacheScope, cacheTtlSeconds } from '../../cache/cache-key.js';
import type { ChatResult } from '../../core/chat-result.js';
import type { ToolCall } from '../../core/chat-types.js';
import { ContentBlockFramer } from '../../core/content-blocks.js';
import type { GenerationIngress } from '../../ingress/types.js';
import type { PromptTokens } from '../../routing/filters.js';
import type { ApiKey } from '../../store/keys.js';
import type { ClientSink } from '../state/client-sink.js';
import { keepResponse } from './keep-response.js';
import { identityFor, responseHeaders, sendStreamHeaders } from './client-response.js';
import { ClientGone, type ResponseState } from '../state/response-state.js';
import type { GenerationDraft, RelayedAnswer } from '../state/generation-draft.js';
import type { GenerationInput } from '../state/generation-input.js';
import { OutputAccumulator } from '../attempt/output-accumulator.js';
import { couldServeLive } from './plan.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * The cache stage of the pipeline: after admission, an opted-in request is looked up in the
 * exact response cache; a hit is answered from it in the client's own API (a streamed request
 * replays as a stream) with `x-op-cache: HIT` and recorded at cost 0; a miss (`x-op-cache: MISS`)
 * runs the attempts and a successful, complete answer is stored. The internal result is stored,
 * so every client API encodes it its own way; an answer the pass-through lane relayed (Messages
 * from an `anthropic` endpoint) is also stored as the client got it — the upstream's body or
 * events — and a hit replays that, in the other form when the request's `stream` differs
 * (the API's `relayedForms`), so signatures, citations, server-tool blocks and event
 * order are the live answer's.
 */

/** What is stored per entry. */
interface CachedAnswer {
  v: 1;
  result: ChatResult;
  servedModel: string | null;
  provider: string | null;
  endpoint: string | null;
  upstreamModel: string | null;
  /** What the pass-through lane sent the client, when it served the answer. */
  relayed?: RelayedAnswer;
}

/** A request's cache lookup: where and for how long. */
export interface CachePlan {
  key: string;
  ttlMs: number;
}

/**
 * Forwarded request headers that change the answer, and so take part in the cache key:
 * `anthropic-beta` turns features on (`anthropic-version` is the same for every client).
 */
const ANSWER_HEADERS = ['anthropic-beta'] as const;

/**
 * The record's warning when a request asks for the cache itself (`op.cache: true`,
 * `x-op-cache: true`) under retention `none`; the response then carries `x-op-cache: BYPASS`.
 */
export const CACHE_BYPASS_WARNING = 'response cache bypassed: the request asked for it (op.cache or x-op-cache: true) but its retention is none, and a cache entry holds the answer\'s text; nothing was looked up or stored';

/**
 * Whether this request uses the cache (`op.cache`, the `x-op-cache` header, the key's or the
 * model's setting; never retention `none` nor embeddings), and its cache key. A request that
 * asks for the cache itself under retention `none` gets `x-op-cache: BYPASS` and
 * {@link CACHE_BYPASS_WARNING} in its record (the key's or model's setting under `none` stays silent).
 */
export function planCache(rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, key: ApiKey, header: string | undefined, body: unknown): CachePlan | undefined {
  if (input.ingress.output !== 'generation' || !body || typeof body !== 'object') return undefined;
  const op = input.chat.op;
  const fromHeader = header === undefined ? undefined : header.trim().toLowerCase() === 'true' ? true : header.trim().toLowerCase() === 'false' ? false : undefined;
  const c = rt.config.cache;
  const request = op?.cache ?? fromHeader;
  if (request === true && draft.retention === 'none') {
    // Asked for explicitly, refused by retention: the client and the record say so.
    draft.extraHeaders['x-op-cache'] = 'BYPASS';
    (input.chat.warnings ??= []).push(CACHE_BYPASS_WARNING);
    draft.warnings.push(CACHE_BYPASS_WARNING);
    return undefined;
  }
  const ttl = cacheTtlSeconds(
    { request, requestTtl: op?.cache_ttl, key: key.settings.cache, model: rt.catalog.models.get(input.chat.model)?.model.cache },
    draft.retention === 'none', c.default_ttl_s, c.max_ttl_s,
  );
  if (ttl === undefined) return undefined;
  const forwarded: Record<string, string> = {};
  for (const name of ANSWER_HEADERS) {
    const v = input.headers?.[name];
    if (v !== undefined) forwarded[name] = v; // input.headers holds only what the API forwards (and session headers)
  }
  return { key: cacheKey(cacheScope(draft.keyId, c.shared_scopes), input.ingress.api, body as Record<string, unknown>, forwarded), ttlMs: ttl * 1000 };
}

/**
 * Answer from the cache when it holds the request and the key could get the stored answer live
 * now ({@link couldServeLive} on the model and endpoint that answered it; else a miss, and the
 * live answer replaces the entry). Returns whether it answered; a store that cannot be read is a
 * miss (logged), never a failed request.
 */
export async function serveFromCache(rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, key: ApiKey, sink: ClientSink, plan: CachePlan, prompt: PromptTokens): Promise<boolean> {
  const ingress = input.ingress;
  if (ingress.output !== 'generation') return false;
  let value: string | null = null;
  try {
    value = await rt.cache.get(plan.key);
  } catch (err) {
    rt.log.warn({ err: (err as Error).message, reqId: draft.requestId }, 'response cache unreachable: answering upstream');
  }
  const entry = value ? readEntry(value) : undefined;
  if (value && !entry) rt.log.warn({ reqId: draft.requestId }, 'response cache: an unreadable entry; answering upstream');
  // The entry's key is the request body: whether its answer may go to this key is decided now,
  // on the endpoint that answered it, against the key's current allowed_models and the request's
  // models and provider preferences as resolved (presets, variants) — a miss when it may not.
  const cached = entry && couldServeLive(rt, input, key, entry.servedModel, entry.endpoint, prompt) ? entry : undefined;
  draft.extraHeaders['x-op-cache'] = cached ? 'HIT' : 'MISS';
  rt.metrics.cacheLookups.inc({ result: cached ? 'hit' : 'miss' });
  if (!cached) return false;
  const { result } = cached;
  draft.cacheHit = true;
  draft.servedModel = cached.servedModel;
  draft.provider = cached.provider;
  draft.endpoint = cached.endpoint;
  draft.upstreamModel = cached.upstreamModel;
  draft.usage = result.usage;
  draft.costPico = 0n;
  draft.finishReason = result.finishReason;
  draft.nativeFinishReason = result.nativeFinishReason;
  draft.content = { request: input.ingress.recordedRequest(input.request), output: { content: result.content, reasoning: result.reasoning ?? undefined, tool_calls: result.toolCalls.length ? result.toolCalls : undefined } };
  const identity = identityFor(draft, cached.servedModel ?? input.chat.model);
  const usage = result.usage ?? { promptTokens: 0, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'estimated' as const };
  draft.markFirstToken();
  // A hit is kept like a live answer (Responses' `store`), so its id can be fetched and continued.
  const kept = { rt, draft, input };
  const relayed = cached.relayed ? relayedReplay(ingress, cached.relayed, input.stream) : undefined;
  if (relayed !== undefined) {
    if (typeof relayed !== 'string') {
      await keepResponse(kept, ingress, relayed.body);
      sink.send(200, responseHeaders(draft), relayed.body);
      return true;
    }
    sendStreamHeaders(sink, { headersSent: false, outputStarted: true, clientGone: new ClientGone(), keepAlive: undefined, poolWaitMs: 0 }, draft);
    sink.end(relayed);
    return true;
  }
  if (!input.stream) {
    const body = ingress.responseBody(identity, result, usage, 0, input.request);
    await keepResponse(kept, ingress, body);
    sink.send(200, responseHeaders(draft), body);
    return true;
  }
  const state: ResponseState = { headersSent: false, outputStarted: true, clientGone: new ClientGone(), keepAlive: undefined, poolWaitMs: 0 };
  sendStreamHeaders(sink, state, draft);
  const encoder = ingress.createStreamEncoder(identity, input.request);
  const framer = ingress.contentBlocks ? new ContentBlockFramer() : undefined;
  let text = encoder.start();
  for (const part of OutputAccumulator.resultToParts(result)) {
    if (part.type === 'finish' || part.type === 'usage' || part.type === 'error') continue;
    if (framer) for (const p of framer.push(part)) text += encoder.part(p);
    else text += encoder.part(part);
  }
  if (framer) for (const p of framer.close()) text += encoder.part(p);
  await sink.write(text + encoder.finish(result.finishReason, usage, 0));
  if (encoder.response) await keepResponse(kept, ingress, encoder.response());
  sink.end(encoder.done());
  return true;
}

/**
 * A relayed answer in the form the request wants: the stream text for a streamed request, the
 * body otherwise — converted by the API's `relayedForms` when it was relayed in the other form.
 * Undefined when it cannot be (no conversion, or stored text it cannot read): the hit is then
 * replayed from the internal result.
 */
function relayedReplay(ingress: GenerationIngress, relayed: RelayedAnswer, stream: boolean): string | { body: unknown } | undefined {
  try {
    if (stream) return 'events' in relayed ? relayed.events : ingress.relayedForms?.events(relayed.body);
    if ('body' in relayed) return { body: relayed.body };
    return ingress.relayedForms ? { body: ingress.relayedForms.body(relayed.events) } : undefined;
  } catch {
    return undefined;
  }
}

/** A stored entry, or undefined when it is not one this version wrote. */
function readEntry(value: string): CachedAnswer | undefined {
  try {
    const entry = JSON.parse(value) as CachedAnswer;
    const r = entry?.result;
    if (entry?.v !== 1 || !r || typeof r !== 'object' || !Array.isArray(r.toolCalls) || typeof r.finishReason !== 'string') return undefined;
    // A relayed answer it cannot read is left out: the hit replays the internal result.
    const relayed = entry.relayed as unknown;
    if (relayed !== undefined && !(relayed && typeof relayed === 'object' && ('body' in relayed || typeof (relayed as { events?: unknown }).events === 'string'))) delete entry.relayed;
    return entry;
  } catch {
    return undefined;
  }
}

/**
 * Store a finished generation's answer: only a success that ended normally (no error, no cut
 * stream, not cancelled) and whose text retention keeps, and not twice (a kept response stores
 * it first: {@link writeToCache}). Never waits: a store failure is logged.
 */
export function storeInCache(rt: GatewayRuntime, draft: GenerationDraft, plan: CachePlan): void {
  if (draft.cacheStored) return;
  void writeToCache(rt, draft, plan);
}

/**
 * Write the draft's answer to the cache now, when it is one to store (see {@link storeInCache});
 * resolves once written or failed (a failure is logged, never thrown). A response that is kept
 * (Responses' `store`) is written to the cache before it is stored, so when a client can find the
 * stored response (and delete it) the cache entry it names exists already.
 */
export async function writeToCache(rt: GatewayRuntime, draft: GenerationDraft, plan: CachePlan): Promise<void> {
  if (draft.cacheHit || draft.cacheStored || draft.status !== 'success' || draft.cancelled || !draft.content || draft.finishReason === null || draft.finishReason === 'error') return;
  draft.cacheStored = true;
  const out = draft.content.output as { content?: string | null; reasoning?: string; tool_calls?: ToolCall[] };
  const answer: CachedAnswer = {
    v: 1,
    result: { content: out.content ?? null, reasoning: out.reasoning ?? null, refusal: null, toolCalls: out.tool_calls ?? [], finishReason: draft.finishReason as ChatResult['finishReason'], nativeFinishReason: draft.nativeFinishReason, usage: draft.usage },
    servedModel: draft.servedModel,
    provider: draft.provider,
    endpoint: draft.endpoint,
    upstreamModel: draft.upstreamModel,
    ...(draft.relayed ? { relayed: draft.relayed } : {}),
  };
  try {
    await rt.cache.set(plan.key, JSON.stringify(answer), plan.ttlMs);
  } catch (err) {
    rt.log.warn({ err: (err as Error).message, reqId: draft.requestId }, 'could not store an answer in the response cache');
  }
}
