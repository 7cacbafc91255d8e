import type { TelemetryConfig } from '../config/schema.js';

/**
 * OpenTelemetry on or off. On when the standard OTLP endpoint variables are set; then the SDK is
 * imported (dynamically) and subscribes to the gateway's diagnostics channels. Off, nothing of
 * the SDK is loaded and no channel has an OpenTelemetry subscriber, so a request pays nothing.
 * @see https://opentelemetry.io/docs/specs/otel/protocol/exporter/
 */

/** A running OpenTelemetry export. */
export interface Telemetry {
  /** Spans dropped because the export queue was full (since start). */
  droppedSpans(): number;
  /** Server spans started and not yet ended (one per request in flight; 0 when idle). */
  openServerSpans(): number;
  /** Export what is queued now (tests, shutdown). */
  flush(): Promise<void>;
  /** Stop listening, export what is queued, and close the exporters. */
  shutdown(): Promise<void>;
}

/** What {@link startTelemetry} starts, from the environment and `telemetry` of the config. */
export interface TelemetryOptions {
  config: Readonly<TelemetryConfig>;
  /** Export traces (an OTLP traces endpoint is configured and `OTEL_TRACES_EXPORTER` is not `none`). */
  traces: boolean;
  /** Export metrics (an OTLP metrics endpoint is configured and `OTEL_METRICS_EXPORTER` is not `none`). */
  metrics: boolean;
  /** How often metrics are exported, in ms (default `OTEL_METRIC_EXPORT_INTERVAL` or 60 000). */
  metricIntervalMs?: number;
}

type Env = Record<string, string | undefined>;

/**
 * Which signals the environment asks for: traces with `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, metrics with `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`; `OTEL_SDK_DISABLED=true` or `OTEL_*_EXPORTER=none` turn
 * one off.
 */
export function signalsFromEnv(env: Env): { traces: boolean; metrics: boolean; metricIntervalMs: number | undefined } {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { traces: false, metrics: false, metricIntervalMs: undefined };
  const base = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
  const interval = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return {
    traces: (base || Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim())) && env.OTEL_TRACES_EXPORTER?.trim() !== 'none',
    metrics: (base || Boolean(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT?.trim())) && env.OTEL_METRICS_EXPORTER?.trim() !== 'none',
    metricIntervalMs: Number.isFinite(interval) && interval > 0 ? interval : undefined,
  };
}

/**
 * Start OpenTelemetry export when the environment configures it; resolves undefined (and loads
 * nothing) when it does not.
 */
export async function startTelemetry(env: Env, config: Readonly<TelemetryConfig>): Promise<Telemetry | undefined> {
  const signals = signalsFromEnv(env);
  if (!signals.traces && !signals.metrics) return undefined;
  const { startOpenTelemetry } = await import('./otel.js');
  return startOpenTelemetry({ config, traces: signals.traces, metrics: signals.metrics, metricIntervalMs: signals.metricIntervalMs });
}
