import { checkBodyBounds } from '../../ingress/body-bounds.js';
import { PromptSize } from '../../accounting/estimate-tokens.js';
import { GatewayError, toGatewayError } from '../../errors/gateway-error.js';
import { gatewayErrorOf } from '../../store/database.js';
import { checkedSession } from '../../ingress/gateway-fields.js';
import type { IngressAdapter, PrepareContext } from '../../ingress/types.js';
import type { ChatRequest, OpOptions } from '../../core/chat-types.js';
import { totalTokens } from '../../core/usage-arithmetic.js';
import type { ApiKey } from '../../store/keys.js';
import { endUserOf, MAX_END_USER, recordedEndUser, type EndUser } from '../../store/end-users.js';
import { newGenerationId } from '../../util/ids.js';
import { resolveAliases } from '../../routing/catalog.js';
import { resolveModelNames } from '../../routing/model-names.js';
import { admit, type CreditLimit } from './admit.js';
import { runAttempts } from '../attempt/attempt-loop.js';
import type { ClientSink } from '../state/client-sink.js';
import { refuseUnrecorded, refuseWith, replyFailure, startKeepAlive, stopKeepAlive } from './client-response.js';
import { ClientGone, type ResponseState } from '../state/response-state.js';
import { finishGeneration } from './finish.js';
import { generationStart, type GenerationStartEvent } from '../state/events.js';
import { GenerationDraft } from '../state/generation-draft.js';
import type { GenerationInput } from '../state/generation-input.js';
import { planAttempts } from './plan.js';
import { clientClosed } from '../attempt/attempt.js';
import { planCache, serveFromCache, storeInCache, type CachePlan } from './response-cache.js';
import type { GatewayRuntime } from '../state/runtime.js';
import type { GenerationsTable } from '../../store/schema.js';

/**
 * A batch line run through the pipeline (pipeline/batches/): the record names the batch and the
 * line's `custom_id`, and goes to `capture` (the worker writes it with the line's result, in one
 * transaction) instead of the record writer.
 */
export interface BatchLineOrigin {
  readonly batchId: string;
  readonly customId: string;
  readonly capture: (row: GenerationsTable) => void;
}

/**
 * The request pipeline, the same for every client API: validate (the API's schema) → admit (allowed
 * models, rate limits, credit) → plan → attempt loop (upstream attempts, each relayed as the client
 * response) → finish and record. Below the route it knows no HTTP framework: it answers through a
 * {@link ClientSink}. Exactly one generation record per request, whatever happens.
 */
export async function serveGeneration(
  rt: GatewayRuntime, ingress: IngressAdapter, body: unknown, key: ApiKey, requestId: string, sink: ClientSink, headers?: Readonly<Record<string, string>>, cacheHeader?: string, userHeader?: string, batchLine?: BatchLineOrigin,
): Promise<void> {
  const model = peek(body, 'model');
  const draft = new GenerationDraft(newGenerationId(), requestId, key.isAdmin ? null : key.id, ingress.api, peek(body, 'stream') === true, typeof model === 'string' ? model.slice(0, 200) : '');
  if (batchLine) {
    draft.batch = { batchId: batchLine.batchId, customId: batchLine.customId };
    draft.captureRow = batchLine.capture;
  }
  // Every answer keeps exactly one record: with the record queue at its bound (the database down
  // for long), refuse before any work, and keep no record of the refusal (counted as dropped).
  if (rt.writer.full(rt.inFlight)) {
    rt.writer.discard('queue_full');
    const err = new GatewayError('records_unavailable', 'generation records cannot be written (the database is unreachable) and the record queue is full (records.max_queued); retry later', { retryAfterSeconds: rt.writer.retryAfterSeconds });
    refuseUnrecorded(sink, ingress, err, draft.requestId);
    return;
  }
  let input: GenerationInput;
  try {
    const server = rt.config.server;
    checkBodyBounds(body, ingress.api, { maxMessages: server.max_messages, maxContentParts: server.max_content_parts });
    let request = ingress.parse(body);
    if (ingress.output === 'generation' && ingress.prepare) request = await ingress.prepare(request, prepareContext(rt, key, request));
    const chat = resolveAliases(rt.catalog, withClientSession(ingress, request, ingress.toChat(request), headers ?? {}));
    resolveModelNames(chat, rt.catalog, rt.config);
    input = { ingress, request, chat, stream: chat.stream === true, headers };
  } catch (thrown) {
    refuse(rt, draft, ingress, sink, thrown);
    return;
  }
  const op = input.chat.op;
  draft.tags = op?.tags ?? [];
  draft.session = op?.session ?? null;
  draft.retention = op?.retention ?? defaultRetention(rt, key);
  if (generationStart.hasSubscribers) generationStart.publish({ draft, chat: input.chat } satisfies GenerationStartEvent);
  let credits: readonly CreditLimit[];
  try {
    const endUser = endUserOfRequest(input.chat, userHeader);
    if (endUser) draft.endUser = recordedEndUser(endUser, draft.retention);
    credits = await admit(rt, key, input.chat, draft, endUser);
  } catch (thrown) {
    refuse(rt, draft, ingress, sink, thrown);
    return;
  }
  const prompt = new PromptSize(input.chat.messages, input.chat.tools);
  const cache = planCache(rt, input, draft, key, cacheHeader, body);
  // A stored response names its entry (keep-response.ts), a hit's included.
  draft.cachePlan = cache;
  if (cache && (await serveCached(rt, input, draft, key, sink, cache, prompt))) return;
  // A pass-through answer is stored as it was relayed (response-cache.ts).
  if (cache) draft.keepRelayed = true;
  await runGeneration(rt, input, draft, sink, credits, prompt);
  if (cache) storeInCache(rt, draft, cache);
}

/** Answer a request from the response cache when it holds it; record it as a generation (cost 0, counted for rate limits). */
async function serveCached(rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, key: ApiKey, sink: ClientSink, cache: CachePlan, prompt: PromptSize): Promise<boolean> {
  try {
    if (!(await serveFromCache(rt, input, draft, key, sink, cache, prompt))) return false;
  } catch (thrown) {
    // Only the client's connection can fail here (the entry was read and checked).
    const err = toGatewayError(thrown);
    rt.log.error({ err: thrown, reqId: draft.requestId }, 'could not answer from the response cache');
    const state: ResponseState = { headersSent: sink.headersSent, outputStarted: sink.headersSent, clientGone: new ClientGone(), keepAlive: undefined, poolWaitMs: 0 };
    await replyFailure(sink, state, input.ingress, draft, err, input.chat.model, input.request);
  }
  countTokens(rt, draft);
  finishGeneration(rt, draft);
  return true;
}

/** Add a finished request's tokens to the per-minute token windows of its key (and its team's and end user's, when they have a token limit). */
function countTokens(rt: GatewayRuntime, draft: GenerationDraft): void {
  if (!draft.keyId || !draft.usage) return;
  const tokens = totalTokens(draft.usage);
  const now = Date.now();
  void rt.limits.addTokens(draft.keyId, tokens, now).catch(() => {});
  if (draft.tokenWindows) for (const id of draft.tokenWindows) void rt.limits.addTokens(id, tokens, now).catch(() => {});
}

/** A key's default retention: its own, else its team's, else the gateway's (`retention`). */
function defaultRetention(rt: GatewayRuntime, key: ApiKey): 'none' | number {
  return key.settings.retention ?? key.team?.settings.retention ?? rt.config.retention;
}

/**
 * The request's end user: its `user` (Anthropic's `metadata.user_id` is mapped to it), else the
 * `x-op-user` header; undefined for none.
 * A `user` longer than {@link MAX_END_USER} is known as `sha256:<hash>`.
 * @throws GatewayError `invalid_request` (param `x-op-user`) for a header longer than {@link MAX_END_USER}.
 */
function endUserOfRequest(chat: ChatRequest, header: string | undefined): EndUser | undefined {
  const id = chat.user ?? header;
  if (id === undefined || id === '') return undefined;
  if (id.length <= MAX_END_USER) return endUserOf(id);
  // The body's `user` has no documented bound (OpenAI's): it still goes upstream as sent, and a
  // longer one is known by its hash. The gateway's own header is bounded.
  if (chat.user === undefined) throw new GatewayError('invalid_request', `x-op-user: at most ${MAX_END_USER} characters`, { param: 'x-op-user' });
  const long = endUserOf(id);
  return { id: `sha256:${long.hash}`, hash: long.hash };
}

/**
 * The internal request with the session an agent client names (a header, Claude Code's
 * `metadata.user_id`) as `op.session`, unless the request sets `op.session` itself. So it groups
 * usage and keys sticky routing like `op.session`.
 * @throws GatewayError `invalid_request` (400, `param` = the header or field) when the value
 * breaks `op.session`'s rule (1 to 256 characters).
 */
function withClientSession(ingress: IngressAdapter, request: unknown, chat: ChatRequest, headers: Readonly<Record<string, string>>): ChatRequest {
  if (ingress.output !== 'generation' || !ingress.clientSession || chat.op?.session !== undefined) return chat;
  const named = ingress.clientSession(request, headers);
  if (named === undefined) return chat;
  chat.op = { ...chat.op, session: checkedSession(named.value, named.param) };
  return chat;
}

/** What an API's `prepare` step reads: the key, the request's retention, the stored responses. */
function prepareContext(rt: GatewayRuntime, key: ApiKey, request: unknown): PrepareContext {
  const retention = (request as { op?: OpOptions }).op?.retention ?? defaultRetention(rt, key);
  return { keyId: key.isAdmin ? null : key.id, retention, responses: rt.responses };
}

function peek(body: unknown, field: string): unknown {
  return body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
}

/** Refuse a request before any upstream attempt: record it, then send the error envelope. */
function refuse(rt: GatewayRuntime, draft: GenerationDraft, ingress: IngressAdapter, sink: ClientSink, thrown: unknown): void {
  // A stored response (previous_response_id) or a key's spend read while the database is down: 503, not 500.
  const err = gatewayErrorOf(thrown);
  refuseWith(sink, ingress, draft, err);
  finishGeneration(rt, draft);
}

/**
 * Serve an admitted request: plan, run the attempts, answer the failure if none answered, and
 * record the generation.
 */
async function runGeneration(rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, sink: ClientSink, credits: readonly CreditLimit[], prompt: PromptSize): Promise<void> {
  const { chat } = input;
  const state: ResponseState = { headersSent: false, outputStarted: false, clientGone: new ClientGone(), keepAlive: undefined, poolWaitMs: 0 };
  const onClose = () => {
    if (sink.finished) return;
    state.clientGone.abort();
    state.upstream?.abort(clientClosed());
  };
  sink.onClose(onClose);
  // records.durability strict: the response's last byte waits for its record to be committed.
  const releaseResponse = rt.writer.strict ? sink.holdEnd() : undefined;
  rt.inFlight++;
  rt.metrics.inFlight.inc();
  const keepAliveMs = rt.config.server.keepalive_interval_ms;
  // A stream framed otherwise than SSE (Gemini's streamed JSON array) has its own type and keep-alive.
  const framing = input.stream && input.ingress.output === 'generation' ? input.ingress.streamFraming?.(input.request) : undefined;
  if (framing) state.streamContentType = framing.contentType;
  if (input.stream && keepAliveMs > 0) startKeepAlive(sink, state, draft, keepAliveMs, framing?.keepAlive ?? (input.ingress.output === 'generation' ? input.ingress.keepAlive : undefined));
  try {
    await runAttempts({ rt, input, draft, sink, state, plan: planAttempts(rt, input, prompt), prompt, credits });
  } catch (thrown) {
    const err: GatewayError = gatewayErrorOf(thrown);
    if (err.code === 'internal_error') rt.log.error({ err: thrown, reqId: draft.requestId }, 'internal error');
    if (state.clientGone.aborted || err.code === 'client_closed_request') {
      draft.cancel();
      if (!state.headersSent) sink.abandon();
    } else {
      await replyFailure(sink, state, input.ingress, draft, err, chat.model, input.request);
    }
  } finally {
    stopKeepAlive(state);
    rt.inFlight--;
    rt.metrics.inFlight.dec();
    countTokens(rt, draft);
    sink.offClose(onClose);
    await finishGeneration(rt, draft);
    releaseResponse?.();
  }
}
