import { channel, type Channel } from 'node:diagnostics_channel';
import type { ChatRequest } from '../../core/chat-types.js';
import type { GatewayError } from '../../errors/gateway-error.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import type { GenerationDraft } from './generation-draft.js';
import type { RecordedAttempt } from '../../store/generation-row.js';
import type { GatewayMetrics } from './metrics.js';
import type { McpToolCallOutcome } from '../../mcp/mcp-gateway.js';

/**
 * The gateway's own events, published on Node diagnostics channels so that tracing, metrics or
 * anything else can follow a generation without the pipeline knowing them (src/telemetry/
 * subscribes). A publisher checks `hasSubscribers` before building a message: with nobody
 * listening an event costs one property read. Messages hold live objects (the draft): a
 * subscriber reads them synchronously and never changes them, except `propagation`.
 * @see https://nodejs.org/docs/latest-v20.x/api/diagnostics_channel.html
 */

/** `opinference:generation:start`: a request passed validation; `chat` is the internal request. */
export interface GenerationStartEvent {
  readonly draft: GenerationDraft;
  readonly chat: ChatRequest;
}

/**
 * `opinference:attempt:start`: an upstream attempt begins. Subscribers may add headers to
 * `propagation` (e.g. W3C `traceparent`); they are sent with the upstream call.
 */
export interface AttemptStartEvent {
  readonly draft: GenerationDraft;
  readonly target: ResolvedEndpoint;
  /** 0-based position among the generation's attempts. */
  readonly index: number;
  /** Why the router put this endpoint where it was. */
  readonly reason: string;
  readonly propagation: Record<string, string>;
}

/** `opinference:attempt:end`: an attempt ended; `error` is set when it failed. */
export interface AttemptEndEvent {
  readonly draft: GenerationDraft;
  readonly target: ResolvedEndpoint;
  readonly index: number;
  /** The attempt as recorded (status, error code, latency in ms). */
  readonly attempt: RecordedAttempt;
  readonly error: GatewayError | undefined;
}

/** `opinference:generation:end`: the generation is closed (its record queued), however it ended. */
export interface GenerationEndEvent {
  readonly draft: GenerationDraft;
  /** Milliseconds since the request started. */
  readonly latencyMs: number;
  /** The Prometheus metrics of the gateway that served it (one process may run several gateways). */
  readonly metrics: GatewayMetrics;
}

export const generationStart: Channel = channel('opinference:generation:start');
export const attemptStart: Channel = channel('opinference:attempt:start');
export const attemptEnd: Channel = channel('opinference:attempt:end');
export const generationEnd: Channel = channel('opinference:generation:end');

/**
 * Publish an attempt's start; returns the headers subscribers want sent upstream (empty, and
 * allocated once, when nobody listens).
 */
export function publishAttemptStart(draft: GenerationDraft, target: ResolvedEndpoint, index: number, reason: string): Record<string, string> | undefined {
  if (!attemptStart.hasSubscribers) return undefined;
  const propagation: Record<string, string> = {};
  attemptStart.publish({ draft, target, index, reason, propagation } satisfies AttemptStartEvent);
  return propagation;
}

/**
 * `opinference:mcp:tool_call:end`: an MCP `tools/call` through the gateway ended (ok, tool
 * error, error or refused), published by the gateway's call observer (server/mcp-call-observer.ts)
 * once its record is queued; telemetry/otel.ts makes its `execute_tool` span from it.
 */
export interface McpToolCallEndEvent {
  readonly outcome: McpToolCallOutcome;
  /** Unix ms at which the gateway received the call (now minus its latency). */
  readonly startedAt: number;
}

export const mcpToolCallEnd: Channel = channel('opinference:mcp:tool_call:end');
