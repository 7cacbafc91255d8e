import type { PromptSize } from '../../accounting/estimate-tokens.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderAdapter } from '../../providers/types.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { transportErrorToGatewayError } from '../../providers/upstream-errors.js';
import type { ClientSink } from '../state/client-sink.js';
import type { ResponseState } from '../stages/client-response.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { GenerationInput } from '../state/generation-input.js';
import type { Lane } from './lane.js';
import type { GatewayRuntime } from '../state/runtime.js';

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

/** Read at most `limit` bytes of an (error) body as UTF-8 text. */
export async function readCapped(body: AsyncIterable<Uint8Array>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    size += chunk.byteLength;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
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
