import type { FastifyReply } from 'fastify';
import type { ChatRequest, CompletionRequest } from '../api/chat-types.js';
import { computeCost, picoToUsdNumber } from '../accounting/cost.js';
import { estimatePromptTokens } from '../accounting/estimate-tokens.js';
import { GatewayError, toGatewayError } from '../errors/gateway-error.js';
import { transportErrorToGatewayError } from '../providers/upstream-errors.js';
import type { ChatResult, ProviderAdapter, ResolvedEndpoint, StreamPart, UpstreamCall, UpstreamOperation } from '../providers/types.js';
import { chatChunkEncoder, completionChunkEncoder, type ChunkEncoder } from '../relay/chunk-encoders.js';
import { sseEvents } from '../relay/sse-events.js';
import { sendUpstream } from '../relay/upstream-client.js';
import { usageToJson } from '../relay/usage-json.js';
import { planRoute } from '../routing/plan.js';
import { writeToClient } from './client-writer.js';
import type { GenerationDraft } from './generation-draft.js';
import { OutputAccumulator } from './output-accumulator.js';
import { chatCompletionBody, textCompletionBody, type ResponseIdentity } from './response-bodies.js';
import { runtimeAdapter, type GatewayRuntime } from './runtime.js';
import { sendError } from '../server/send-error.js';

/** What the client asked for: a chat completion, or a legacy completion (with its chat form). */
export type GenerationInput =
  | { api: 'chat'; request: ChatRequest }
  | { api: 'completions'; request: CompletionRequest; chat: ChatRequest };

/** Legacy-only parameters: they make sense only on endpoints that serve text completions natively. */
const NATIVE_COMPLETION_PARAMS = ['suffix', 'echo', 'best_of', 'logprobs'] as const;

/** Largest upstream error body read, in bytes. */
const MAX_ERROR_BODY = 64 * 1024;

async function readCapped(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    size += chunk.byteLength;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** Mutable state of one request across attempts. */
interface RunState {
  committed: boolean;
  readonly clientGone: AbortController;
}

const reasoningExhausted = () =>
  new GatewayError(
    'reasoning_exhausted_output_limit',
    'the model used the whole output limit for reasoning and produced no answer; raise max_completion_tokens or lower the reasoning effort',
    { param: 'max_completion_tokens' },
  );

/**
 * Serve one generation: plan the endpoints, try them in order until one answers (failing over
 * only before the first byte reaches the client), relay the answer, and queue exactly one
 * generation record, whatever happens.
 */
export async function runGeneration(rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, reply: FastifyReply): Promise<void> {
  const chat = input.api === 'chat' ? input.request : input.chat;
  const stream = input.request.stream === true;
  const state: RunState = { committed: false, clientGone: new AbortController() };
  const onClose = () => {
    if (!reply.raw.writableFinished) state.clientGone.abort();
  };
  reply.raw.on('close', onClose);
  const promptEstimate = estimatePromptTokens(chat.messages, chat.tools);
  try {
    let plan = planRoute(chat, rt.catalog, promptEstimate).endpoints;
    if (input.api === 'completions') plan = restrictForCompletion(input.request, plan);
    let lastError: GatewayError | undefined;
    for (const target of plan) {
      if (state.clientGone.signal.aborted) break;
      const adapter = runtimeAdapter(rt, target.provider);
      const native = input.api === 'completions' && target.endpoint.supports_text_completions && adapter.buildCompletionCall !== undefined;
      const operation: UpstreamOperation = native ? 'text-completion' : 'chat';
      const started = performance.now();
      try {
        const call = native ? adapter.buildCompletionCall!(input.request as CompletionRequest, target, stream) : await adapter.buildChatCall(chat, target, stream);
        draft.dropped = call.dropped;
        draft.warnings = call.warnings ?? [];
        const status = stream
          ? await streamAttempt(rt, input, draft, reply, state, target, adapter, call, operation, promptEstimate)
          : await completeAttempt(rt, input, draft, reply, state, target, adapter, call, operation, promptEstimate);
        draft.attempts.push({ endpoint: target.id, provider: target.provider.id, model: target.model.id, status, error_code: draft.errorCode, latency_ms: Math.round(performance.now() - started) });
        return;
      } catch (thrown) {
        const err = toGatewayError(thrown);
        const upstreamStatus = typeof err.metadata?.upstream_status === 'number' ? err.metadata.upstream_status : null;
        draft.attempts.push({ endpoint: target.id, provider: target.provider.id, model: target.model.id, status: upstreamStatus, error_code: err.code, latency_ms: Math.round(performance.now() - started) });
        if (state.committed || state.clientGone.signal.aborted || !err.retryable) throw err;
        rt.log.warn({ reqId: draft.requestId, endpoint: target.id, code: err.code }, 'upstream attempt failed; trying the next endpoint');
        lastError = err;
      }
    }
    if (state.clientGone.signal.aborted) throw new GatewayError('client_closed_request', 'the client closed the connection');
    throw lastError ?? new GatewayError('no_endpoint_available', `no endpoint serves model ${JSON.stringify(chat.model)}`);
  } catch (thrown) {
    const err = toGatewayError(thrown);
    if (err.code === 'internal_error') rt.log.error({ err: thrown, reqId: draft.requestId }, 'internal error');
    if (state.clientGone.signal.aborted || err.code === 'client_closed_request') {
      draft.status = 'cancelled';
      draft.cancelled = true;
      draft.errorCode = 'client_closed_request';
      draft.httpStatus = 499;
      if (!reply.sent && !state.committed) reply.hijack();
    } else {
      draft.status = 'error';
      draft.errorCode = err.code;
      draft.errorMessage = err.message;
      if (!state.committed) {
        draft.httpStatus = err.status;
        sendError(reply, err, draft.requestId);
      }
    }
  } finally {
    reply.raw.off('close', onClose);
    const row = draft.toRow();
    rt.writer.enqueue(row);
    rt.log.info(
      { reqId: row.request_id, generation: row.id, model: row.served_model ?? row.requested_model, provider: row.provider, status: row.status, code: row.error_code, streamed: stream, prompt_tokens: row.prompt_tokens, completion_tokens: row.completion_tokens, ms: row.latency_ms, ttft_ms: row.ttft_ms },
      'generation',
    );
  }
}

/**
 * Drop endpoints that cannot take legacy-only parameters.
 * @throws GatewayError `unsupported_parameter` naming the first such parameter when none can.
 */
function restrictForCompletion(req: CompletionRequest, plan: ResolvedEndpoint[]): ResolvedEndpoint[] {
  const used = NATIVE_COMPLETION_PARAMS.find((p) => req[p] !== undefined && req[p] !== null && req[p] !== false);
  if (!used) return plan;
  const native = plan.filter((t) => t.endpoint.supports_text_completions);
  if (native.length === 0) {
    throw new GatewayError('unsupported_parameter', `${used}: not supported by the endpoints of ${JSON.stringify(req.model)}, which serve chat only`, { param: used });
  }
  return native;
}

function identity(draft: GenerationDraft, target: ResolvedEndpoint): ResponseIdentity {
  return { id: draft.id, created: Math.floor(draft.createdAt / 1000), model: target.model.id };
}

function settle(draft: GenerationDraft, target: ResolvedEndpoint, acc: OutputAccumulator, promptEstimate: number) {
  const usage = acc.usageOr(promptEstimate);
  const cost = computeCost(usage, target.endpoint.pricing);
  draft.usage = usage;
  draft.costPico = cost.total;
  draft.servedModel = target.model.id;
  draft.provider = target.provider.id;
  draft.endpoint = target.id;
  draft.upstreamModel = target.endpoint.upstream_model;
  draft.finishReason = acc.finish?.finishReason ?? null;
  draft.nativeFinishReason = acc.finish?.nativeFinishReason ?? null;
  return usageToJson(usage, picoToUsdNumber(cost.total));
}

function keepContent(draft: GenerationDraft, input: GenerationInput, acc: OutputAccumulator) {
  if (draft.retention === 'none') return;
  draft.content = {
    request: input.api === 'chat' ? { messages: input.request.messages } : { prompt: input.request.prompt },
    output: { content: acc.text, reasoning: acc.reasoning || undefined, tool_calls: acc.toolCalls.length ? acc.toolCalls : undefined },
  };
}

function responseHeaders(draft: GenerationDraft): Record<string, string> {
  return { 'x-request-id': draft.requestId, 'x-op-generation-id': draft.id };
}

/** One non-streamed attempt. Returns the upstream status. */
async function completeAttempt(
  rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, reply: FastifyReply, state: RunState,
  target: ResolvedEndpoint, adapter: ProviderAdapter, call: UpstreamCall, operation: UpstreamOperation, promptEstimate: number,
): Promise<number> {
  const total = new AbortController();
  let timedOut = false;
  const timer = target.timeouts.total_ms > 0 ? setTimeout(() => { timedOut = true; total.abort(); }, target.timeouts.total_ms) : undefined;
  try {
    const res = await sendUpstream(call, rt.pools.agentFor(target.provider), target.timeouts, AbortSignal.any([state.clientGone.signal, total.signal]));
    if (res.statusCode >= 300) {
      throw adapter.parseErrorResponse(res.statusCode, res.headers, await readCapped(res.body, MAX_ERROR_BODY));
    }
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new GatewayError('upstream_invalid_response', `${target.provider.id}: response body is not JSON`, { metadata: { provider: target.provider.id } });
    }
    const result: ChatResult = adapter.parseResult(json, operation);
    const acc = OutputAccumulator.fromResult(result);
    const usage = settle(draft, target, acc, promptEstimate);
    keepContent(draft, input, acc);
    if (result.finishReason === 'length' && !acc.hasAnswer()) throw reasoningExhausted();
    draft.markFirstToken();
    const ident = identity(draft, target);
    const body = input.api === 'chat' ? chatCompletionBody(ident, result, usage) : textCompletionBody(ident, result, usage);
    reply.headers(responseHeaders(draft)).code(200).send(body);
    return res.statusCode;
  } catch (err) {
    if (timedOut) throw new GatewayError('upstream_timeout', `${target.provider.id}: no complete response within ${target.timeouts.total_ms} ms`, { metadata: { provider: target.provider.id } });
    if (err instanceof GatewayError) throw err;
    if (state.clientGone.signal.aborted) throw new GatewayError('client_closed_request', 'the client closed the connection');
    throw transportErrorToGatewayError(err, target.provider.id);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One streamed attempt. Before the first part is relayed, every failure is thrown (so the
 * router may fail over); after it, a failure ends the stream with the error chunk.
 */
async function streamAttempt(
  rt: GatewayRuntime, input: GenerationInput, draft: GenerationDraft, reply: FastifyReply, state: RunState,
  target: ResolvedEndpoint, adapter: ProviderAdapter, call: UpstreamCall, operation: UpstreamOperation, promptEstimate: number,
): Promise<number> {
  const attempt = new AbortController();
  let firstTokenTimedOut = false;
  const ftMs = target.timeouts.first_token_ms;
  const firstTokenTimer = ftMs > 0 ? setTimeout(() => { firstTokenTimedOut = true; attempt.abort(); }, ftMs) : undefined;
  const ident = identity(draft, target);
  const encoder: ChunkEncoder = input.api === 'chat' ? chatChunkEncoder(ident) : completionChunkEncoder(ident);
  const acc = new OutputAccumulator();
  const raw = reply.raw;

  const commit = () => {
    clearTimeout(firstTokenTimer);
    state.committed = true;
    reply.hijack();
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...responseHeaders(draft),
    });
    return writeToClient(raw, encoder.start());
  };

  const emit = async (part: StreamPart) => {
    if (!state.committed) {
      if (part.type === 'error') throw part.error;
      await commit();
    }
    switch (part.type) {
      case 'error':
        throw part.error;
      case 'finish':
      case 'usage':
        acc.add(part);
        return;
      default:
        acc.add(part);
        draft.markFirstToken();
        await writeToClient(raw, encoder.part(part));
    }
  };

  let status = 0;
  try {
    const res = await sendUpstream(call, rt.pools.agentFor(target.provider), target.timeouts, AbortSignal.any([state.clientGone.signal, attempt.signal]));
    status = res.statusCode;
    if (res.statusCode >= 300) {
      throw adapter.parseErrorResponse(res.statusCode, res.headers, await readCapped(res.body, MAX_ERROR_BODY));
    }
    const contentType = String(res.headers['content-type'] ?? '');
    if (contentType.includes('application/json')) {
      // Asked for a stream, got one JSON body: an error, or a server that ignores `stream`.
      const json = JSON.parse(await res.body.text()) as unknown;
      for (const part of OutputAccumulator.resultToParts(adapter.parseResult(json, operation))) await emit(part);
    } else {
      const transform = adapter.createStreamTransform(operation);
      for await (const event of sseEvents(res.body)) {
        for (const part of transform.push(event)) await emit(part);
        if (state.clientGone.signal.aborted) break;
      }
      if (!state.clientGone.signal.aborted) for (const part of transform.flush()) await emit(part);
    }
    if (state.clientGone.signal.aborted) throw new GatewayError('client_closed_request', 'the client closed the connection');
    if (!state.committed) await commit();
    const usage = settle(draft, target, acc, promptEstimate);
    keepContent(draft, input, acc);
    if (acc.finish?.finishReason === 'length' && !acc.hasAnswer()) {
      const err = reasoningExhausted();
      draft.status = 'error';
      draft.errorCode = err.code;
      draft.errorMessage = err.message;
      await writeToClient(raw, encoder.error(err.toBody(draft.requestId), usage));
    } else {
      await writeToClient(raw, encoder.finish(acc.finish?.finishReason ?? 'stop'));
      await writeToClient(raw, encoder.usage(usage));
    }
    raw.end(encoder.done());
    return status;
  } catch (thrown) {
    let err: GatewayError;
    if (state.clientGone.signal.aborted) err = new GatewayError('client_closed_request', 'the client closed the connection');
    else if (firstTokenTimedOut) err = new GatewayError('upstream_timeout', `${target.provider.id}: no first token within ${ftMs} ms`, { metadata: { provider: target.provider.id } });
    else if (thrown instanceof GatewayError) err = thrown;
    else if (thrown instanceof SyntaxError) err = new GatewayError('upstream_invalid_response', `${target.provider.id}: response body is not JSON`, { metadata: { provider: target.provider.id } });
    else err = transportErrorToGatewayError(thrown, target.provider.id);
    if (!state.committed) throw err;
    // After the first byte: no failover. Record what was seen and end with the error chunk.
    const usage = settle(draft, target, acc, promptEstimate);
    keepContent(draft, input, acc);
    if (err.code === 'client_closed_request') {
      attempt.abort();
      throw err;
    }
    draft.status = 'error';
    draft.errorCode = err.code;
    draft.errorMessage = err.message;
    rt.log.warn({ reqId: draft.requestId, endpoint: target.id, code: err.code }, 'stream failed after the first byte');
    await writeToClient(raw, encoder.error(err.toBody(draft.requestId), usage));
    raw.end(encoder.done());
    return status;
  } finally {
    clearTimeout(firstTokenTimer);
  }
}
