import { estimateTextTokens } from '../../accounting/estimate-tokens.js';
import { EMBEDDING_BATCH_LIMIT } from '../../config/schema.js';
import type { Usage } from '../../core/chat-types.js';
import { encodeEmbeddingBase64, type EmbeddingRequest } from '../../core/embedding-types.js';
import { addUsage } from '../../core/usage-arithmetic.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { EmbeddingIngress } from '../../ingress/types.js';
import type { UpstreamExchange } from '../../upstream/upstream-exchange.js';
import { nonStreamedFailure, startExchange, upstreamFailure, type Attempt } from './attempt.js';
import { responseHeaders } from '../stages/client-response.js';
import { keepRecordText, meterUsage } from '../stages/finish.js';

/**
 * The upstream attempt of an embeddings request: the inputs in batches of the endpoint's
 * `max_embedding_inputs` (at most the kind's `EMBEDDING_BATCH_LIMIT`), one upstream call each (in order), the vectors joined and the usage
 * summed (a batch without usage makes the whole count the gateway's estimate); vectors the
 * upstream sent as floats are base64-encoded here when the client asked for `base64`; then one
 * JSON response. Any failure fails the whole attempt (the loop may fail over).
 * Returns the status of the last upstream call.
 */
export async function embedAttempt(a: Attempt, ingress: EmbeddingIngress): Promise<number> {
  const { rt, input, draft, state, target, adapter } = a;
  if (!adapter.buildEmbeddingCall || !adapter.parseEmbeddingResult) {
    throw new GatewayError('internal_error', `provider kind ${target.provider.kind} has no embeddings call`);
  }
  const req = ingress.toEmbeddingRequest(input.request);
  const batchSize = Math.min(target.endpoint.max_embedding_inputs, EMBEDDING_BATCH_LIMIT[target.provider.kind] ?? Number.POSITIVE_INFINITY);
  const slot = await rt.pools.acquire(target.provider, target.timeouts.pool_wait_ms, () => [state.clientGone.signal, rt.shutdown.signal]);
  state.poolWaitMs = slot.waitedMs;
  let timedOut = false;
  let res: UpstreamExchange | undefined;
  // One total timeout over every batch: it cancels the batch in flight.
  const timer = target.timeouts.total_ms > 0 ? setTimeout(() => { timedOut = true; res?.abort(new Error('total timeout')); }, target.timeouts.total_ms) : undefined;
  const embeddings: Array<number[] | string> = [];
  let usage: Usage | null = null;
  let reported = true;
  let status = 0;
  try {
    for (let start = 0; start < req.input.length; start += batchSize) {
      const batch = { ...req, input: req.input.slice(start, start + batchSize) } as EmbeddingRequest;
      const call = await adapter.buildEmbeddingCall(batch, target);
      if (a.propagation) call.headers = { ...call.headers, ...a.propagation };
      if (start === 0) {
        draft.dropped = call.dropped;
        draft.warnings = call.warnings ?? [];
        draft.routingReason = a.reason;
      }
      if (timedOut) throw new Error('total timeout');
      res = startExchange(a, call);
      await res.head();
      status = res.statusCode;
      if (res.statusCode >= 300) throw await upstreamFailure(a, res);
      let json: unknown;
      try {
        // As before the move: a body over the cap, or cut, is reported as not JSON.
        json = JSON.parse(await res.text(rt.config.server.upstream_max_response_bytes, target.provider.id));
      } catch {
        throw new GatewayError('upstream_invalid_response', `response body is not JSON`, { metadata: { provider_name: target.provider.id } });
      }
      const result = adapter.parseEmbeddingResult(json);
      if (result.embeddings.length !== batch.input.length) {
        throw new GatewayError('upstream_invalid_response', `${result.embeddings.length} vectors for ${batch.input.length} inputs`, { metadata: { provider_name: target.provider.id } });
      }
      // Upstreams that answer floats only (Gemini), or ignore the field: the gateway encodes.
      const base64 = req.encoding_format === 'base64';
      for (const v of result.embeddings) embeddings.push(base64 && typeof v !== 'string' ? encodeEmbeddingBase64(v) : v);
      if (result.usage === null) reported = false;
      else usage = addUsage(usage, result.usage);
    }
  } catch (err) {
    // Batches already embedded are billed by the upstream: they are metered (as reported, else
    // estimated) before the failure is thrown, so the record and the key's spend count them.
    if (embeddings.length > 0) meterUsage(draft, target, reported && usage !== null ? usage : estimateUsage(req.input.slice(0, embeddings.length)));
    throw nonStreamedFailure(a, err, timedOut);
  } finally {
    clearTimeout(timer);
    state.upstream = undefined;
    slot.release();
  }
  // A batch without usage makes the whole count an estimate (never a mix passed off as reported).
  const metered = reported && usage !== null ? usage : estimateUsage(req.input);
  const costUsd = meterUsage(draft, target, metered);
  draft.finishReason = 'stop';
  keepRecordText(draft, input, { vectors: embeddings.length });
  draft.markFirstToken();
  state.outputStarted = true;
  a.sink.send(200, responseHeaders(draft), ingress.embeddingBody(target.model.id, { embeddings, usage: metered }, metered, costUsd, input.request));
  return status;
}

/** The tokenizer's count of the inputs (token-id inputs count their ids). */
function estimateUsage(inputs: string[] | number[][]): Usage {
  let tokens = 0;
  for (const item of inputs) tokens += typeof item === 'string' ? estimateTextTokens(item) : item.length;
  return { promptTokens: tokens, completionTokens: null, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'estimated' };
}
