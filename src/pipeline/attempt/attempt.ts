import type { PromptSize } from '../../accounting/estimate-tokens.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderAdapter, UpstreamCall } from '../../providers/types.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { transportErrorToGatewayError } from '../../providers/upstream-errors.js';
import type { ClientSink } from '../state/client-sink.js';
import type { ResponseState } from '../state/response-state.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { GenerationInput } from '../state/generation-input.js';
import type { Lane } from './lane.js';
import type { GatewayRuntime } from '../state/runtime.js';
import { UpstreamExchange } from '../../upstream/upstream-exchange.js';

/** What every kind of upstream attempt shares: its context, and helpers. */

/** Largest upstream error body read, in bytes. */
export const MAX_ERROR_BODY = 64 * 1024;

/** What one attempt works with (one object per attempt, not a closure per part). */
export interface Attempt {
  readonly rt: GatewayRuntime;
  readonly input: GenerationInput;
  readonly draft: GenerationDraft;
  readonly sink: ClientSink;
  readonly state: ResponseState;
  readonly target: ResolvedEndpoint;
  readonly adapter: ProviderAdapter;
  readonly lane: Lane;
  readonly prompt: PromptSize;
  /** Why the router put this endpoint where it was (for the record). */
  readonly reason: string;
  /** Headers telemetry asked to send upstream (trace context), when anyone listens. */
  readonly propagation?: Record<string, string> | undefined;
}

export const clientClosed = () => new GatewayError('client_closed_request', 'the client closed the connection');
export const shuttingDown = () => new GatewayError('gateway_shutting_down', 'the gateway is shutting down and its drain time ran out; retry the request');

/**
 * The catalog error for a failed non-streamed call: the drain ran out, the total timeout fired
 * (`timedOut`), an upstream error as parsed, the client left, or a transport failure.
 */
export function nonStreamedFailure(a: Attempt, err: unknown, timedOut: boolean): GatewayError {
  const { target } = a;
  if (a.rt.shutdown.signal.aborted) return shuttingDown();
  if (timedOut) return new GatewayError('upstream_timeout', `no complete response within ${target.timeouts.total_ms} ms`, { metadata: { provider_name: target.provider.id } });
  if (err instanceof GatewayError) return err;
  if (a.state.clientGone.aborted) return clientClosed();
  return transportErrorToGatewayError(err, target.provider.id);
}

/**
 * Start one upstream call of an attempt on the one call runner, {@link UpstreamExchange}, that
 * every operation (chat, stream, embeddings batch, count_tokens) goes through: the provider's
 * pooled agent and its timeouts (`first_token_ms` for the head, `idle_ms` between chunks), the
 * response caps of its readers, and the live-call set a shutdown cuts. The call is
 * `state.upstream` until the attempt clears it, so a client leaving cancels it at once. The
 * caller holds a connection slot and waits for {@link UpstreamExchange.head}; then a status of
 * 300 or more goes to {@link upstreamFailure}. Synchronous: no await added before the call.
 * @throws GatewayError `client_closed_request` or `gateway_shutting_down` instead of calling.
 */
export function startExchange(a: Attempt, call: UpstreamCall): UpstreamExchange {
  const { rt, state, target } = a;
  if (state.clientGone.aborted) throw clientClosed();
  if (rt.shutdown.signal.aborted) throw shuttingDown();
  const res = new UpstreamExchange(call, rt.pools.agentFor(target.provider), target.timeouts, rt.upstreamCalls);
  state.upstream = res;
  return res;
}

/**
 * The error of an upstream answer with a status of 300 or more: at most {@link MAX_ERROR_BODY}
 * bytes of its body, parsed by the provider's adapter (which redacts the provider's secrets).
 * An upstream's `Retry-After` is capped at `routing.retry_after_cap_ms` (rounded up to seconds)
 * for the client too, as it is for the cooldown (a cap of 0, no cooldowns, caps nothing): a
 * client is not told to wait 27 hours.
 */
export async function upstreamFailure(a: Attempt, res: UpstreamExchange): Promise<GatewayError> {
  const err = a.adapter.parseErrorResponse(res.statusCode, res.headers, await res.cappedText(MAX_ERROR_BODY));
  const cap = Math.ceil(a.rt.config.routing.retry_after_cap_ms / 1000);
  if (err.retryAfterSeconds === undefined || cap === 0 || err.retryAfterSeconds <= cap) return err;
  return new GatewayError(err.code, err.message, { status: err.status, param: err.param, retryAfterSeconds: cap, metadata: err.metadata, upstream: err.upstream, cause: err.cause });
}
