import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { OverloadConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GatewayRuntime } from '../pipeline/state/runtime.js';
import { sendError } from './send-error.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route starts generation work: it is counted in flight and refused with 503
     * `gateway_overloaded` while `server.overload` is passed (see {@link installOverload}).
     */
    admission?: boolean;
  }
}

/** Why new generation work is refused: the `reason` label of `opinference_overload_refusals_total`. */
export type OverloadReason = 'event_loop_delay' | 'event_loop_utilization' | 'in_flight' | 'streams';

/** Every {@link OverloadReason}, in the order they are checked. */
export const OVERLOAD_REASONS: readonly OverloadReason[] = ['event_loop_delay', 'event_loop_utilization', 'in_flight', 'streams'];

/** A passed threshold: which, the value now and the configured limit (ms, a 0–1 ratio, or a count). */
export interface OverloadState {
  reason: OverloadReason;
  value: number;
  limit: number;
}

/** The overload check of one gateway: its counters and its verdict, for `/ready` and `/metrics`. */
export interface Overload {
  /** Generation requests admitted and not yet closed. */
  readonly inFlight: number;
  /** Streamed generation requests admitted and not yet closed. */
  readonly streams: number;
  /** Mean event-loop delay over the last sample interval, in ms (0 before the first sample). */
  eventLoopDelayMs(): number;
  /** Event-loop utilization over the last sample interval, 0–1. */
  eventLoopUtilization(): number;
  /**
   * The first threshold passed now (loop delay, loop utilization, in-flight requests, streams at
   * their limit), or null while the process takes new work. Counts at their limit count as
   * overloaded: the next request would be refused.
   */
  state(): OverloadState | null;
}

/** The raw response of a request counted in flight; `stream` once it is counted as a stream too. */
const kCounted = Symbol('opinference.overload.counted');
const kStream = Symbol('opinference.overload.stream');
type CountedResponse = FastifyReply['raw'] & { [kCounted]?: true; [kStream]?: true };

/** Refusals are logged at most once per this many ms, with the counts since the last line. */
const LOG_EVERY_MS = 1000;

const LIMIT_NAMES: Record<OverloadReason, string> = {
  event_loop_delay: 'max_event_loop_delay_ms',
  event_loop_utilization: 'max_event_loop_utilization',
  in_flight: 'max_in_flight_requests',
  streams: 'max_streams',
};

/** The sentence of a refusal, naming the value, the limit and its config key. */
export function describeOverload(s: OverloadState): string {
  const what =
    s.reason === 'event_loop_delay' ? (Number.isFinite(s.value) ? `the mean event-loop delay is ${Math.round(s.value)} ms` : 'the event loop was blocked for the whole sample interval')
    : s.reason === 'event_loop_utilization' ? `the event-loop utilization is ${s.value.toFixed(3)}`
    : s.reason === 'in_flight' ? `${s.value} generation requests are being served`
    : `${s.value} streams are held`;
  return `${what}, over server.overload.${LIMIT_NAMES[s.reason]} ${s.limit}`;
}

/**
 * Overload protection of the generation routes (those whose route config has `admission: true`,
 * i.e. every `generate` route of ingress/registry.ts).
 *
 * - `@fastify/under-pressure` samples the event loop on a timer (`server.overload.sample_interval_ms`,
 *   read once here): the mean delay and the utilization of the last interval. It is registered
 *   without thresholds, so it adds no hook of its own; the thresholds are read from the live
 *   config on each request (a reload changes them).
 * - One `onRequest` hook (add it before route auth: a refusal costs no key lookup and no body
 *   read) refuses a generation request with 503 `gateway_overloaded` (`Retry-After:
 *   server.overload.retry_after_s`, the envelope of the API called) while the loop is over a
 *   threshold or `max_in_flight_requests` are in flight, else counts it in flight until its
 *   response closes (one integer and one `close` listener per request).
 * - A `preHandler` on the same routes (the body is parsed by then) refuses a streamed request
 *   (`"stream": true`) while `max_streams` streams are held, else counts it as held.
 *
 * A refusal writes no generation record: it is counted in `opinference_overload_refusals_total`
 * by reason and logged at most once a second. Streams already admitted are never touched.
 * `/health` and `/ready` have no `admission`, so they are never refused.
 * @see https://github.com/fastify/under-pressure
 */
export function installOverload(app: FastifyInstance, rt: () => GatewayRuntime): Overload {
  const sampleInterval = rt().config.server.overload.sample_interval_ms;
  // No thresholds: under-pressure only samples (and decorates `memoryUsage`); its own onRequest hook is not added.
  void app.register(underPressure, { sampleInterval, eventLoopUtilizationMode: 'interval' });

  let inFlight = 0;
  let streams = 0;
  const refusedSinceLog: Record<OverloadReason, number> = { event_loop_delay: 0, event_loop_utilization: 0, in_flight: 0, streams: 0 };
  let lastLog = 0;

  const sample = (): { eventLoopDelay: number; eventLoopUtilized: number } =>
    (app as Partial<Pick<FastifyInstance, 'memoryUsage'>>).memoryUsage?.() ?? { eventLoopDelay: 0, eventLoopUtilized: 0 };

  /** The loop or in-flight threshold passed now, or null (streams are checked after parsing). */
  const admissionState = (o: OverloadConfig, atCapacity: boolean): OverloadState | null => {
    if (o.max_event_loop_delay_ms > 0 || o.max_event_loop_utilization > 0) {
      const m = sample();
      if (o.max_event_loop_delay_ms > 0 && m.eventLoopDelay > o.max_event_loop_delay_ms) return { reason: 'event_loop_delay', value: m.eventLoopDelay, limit: o.max_event_loop_delay_ms };
      if (o.max_event_loop_utilization > 0 && m.eventLoopUtilized > o.max_event_loop_utilization) return { reason: 'event_loop_utilization', value: m.eventLoopUtilized, limit: o.max_event_loop_utilization };
    }
    if (o.max_in_flight_requests > 0 && inFlight >= o.max_in_flight_requests) return { reason: 'in_flight', value: inFlight, limit: o.max_in_flight_requests };
    if (atCapacity && o.max_streams > 0 && streams >= o.max_streams) return { reason: 'streams', value: streams, limit: o.max_streams };
    return null;
  };

  const refuse = (req: FastifyRequest, reply: FastifyReply, state: OverloadState, retryAfterSeconds: number): void => {
    const runtime = rt();
    runtime.metrics.overloadRefusals.inc({ reason: state.reason });
    refusedSinceLog[state.reason]++;
    const now = Date.now();
    if (now - lastLog >= LOG_EVERY_MS) {
      lastLog = now;
      app.log.warn({ refused: { ...refusedSinceLog }, inFlight, streams, eventLoopDelayMs: Math.round(sample().eventLoopDelay) }, `overloaded: refusing new generation requests (${describeOverload(state)})`);
      for (const r of OVERLOAD_REASONS) refusedSinceLog[r] = 0;
    }
    sendError(reply, new GatewayError('gateway_overloaded', `the gateway is overloaded: ${describeOverload(state)}; retry in ${retryAfterSeconds} s, or on another replica`, { retryAfterSeconds, metadata: { overload: state.reason } }), req.id);
  };

  // One shared listener: `this` is the response; no closure per request.
  function release(this: CountedResponse): void {
    if (this[kCounted]) inFlight--;
    if (this[kStream]) streams--;
    this[kCounted] = undefined;
    this[kStream] = undefined;
  }

  const admitStream = (req: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction): void => {
    if ((req.body as { stream?: unknown } | null | undefined)?.stream !== true) return next();
    const o = rt().config.server.overload;
    if (o.max_streams > 0 && streams >= o.max_streams) return refuse(req, reply, { reason: 'streams', value: streams, limit: o.max_streams }, o.retry_after_s);
    streams++;
    (reply.raw as CountedResponse)[kStream] = true;
    next();
  };

  // Every admission route gets the stream check after parsing (routes are registered after this).
  app.addHook('onRoute', (route) => {
    if (route.config?.admission !== true) return;
    const existing = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
    route.preHandler = [admitStream, ...existing];
  });

  app.addHook('onRequest', (req, reply, next) => {
    if (req.routeOptions.config.admission !== true) return next();
    const o = rt().config.server.overload;
    const state = admissionState(o, false);
    if (state) return refuse(req, reply, state, o.retry_after_s);
    inFlight++;
    const raw = reply.raw as CountedResponse;
    raw[kCounted] = true;
    raw.once('close', release);
    next();
  });

  const overload: Overload = {
    get inFlight() {
      return inFlight;
    },
    get streams() {
      return streams;
    },
    eventLoopDelayMs: () => sample().eventLoopDelay,
    eventLoopUtilization: () => sample().eventLoopUtilized,
    state: () => admissionState(rt().config.server.overload, true),
  };
  rt().metrics.observeOverload(overload);
  return overload;
}
