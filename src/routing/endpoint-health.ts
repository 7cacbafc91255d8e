/**
 * Health of each endpoint: a circuit breaker and rolling statistics (success rate, time to
 * first token, latency, output tokens per second). The router reads it to order and exclude
 * endpoints; `GET /v1/models/{author}/{slug}/endpoints` shows it. Reads are always local; with
 * a {@link HealthRegistry.onEvent} listener (see health-sharing.ts) every local outcome is also
 * handed on, and outcomes of other replicas come back through {@link HealthRegistry.applyRemote}.
 * Times are ms; throughput is output tokens per second.
 */
import { StickyRoutes } from './sticky-routes.js';
import { CredentialCooldowns } from './provider-credentials.js';

/** Breaker and statistics settings (config `routing`). */
export interface HealthSettings {
  /** Consecutive failures that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit refuses traffic before one half-open probe, in ms. */
  openMs: number;
  /** How long samples are kept, in ms. */
  windowMs: number;
  /** A failure within this many ms makes an endpoint "recently failing" (ordered last), in ms. */
  recentFailureMs: number;
}

export type CircuitState = 'closed' | 'open' | 'half-open';

interface Sample {
  at: number;
  ok: boolean;
  latencyMs: number;
  ttftMs: number | null;
  tokensPerSecond: number | null;
}

/**
 * Whether an endpoint's statistics meet OpenRouter's performance preferences: time to first
 * token at or under `preferred_max_latency` (seconds) and throughput at or over
 * `preferred_min_throughput` (tokens per second), at every percentile given. An endpoint
 * without samples meets them (nothing is known against it).
 * @see https://openrouter.ai/docs/guides/routing/provider-selection#performance-thresholds
 */
export function meetsPerformance(
  stats: Pick<EndpointStats, 'latency_last_30m' | 'throughput_last_30m'>,
  maxLatencyS: Partial<Percentiles> | undefined,
  minThroughput: Partial<Percentiles> | undefined,
): boolean {
  for (const q of ['p50', 'p75', 'p90', 'p99'] as const) {
    const lat = stats.latency_last_30m?.[q];
    if (maxLatencyS?.[q] !== undefined && lat !== undefined && lat > maxLatencyS[q]! * 1000) return false;
    const tps = stats.throughput_last_30m?.[q];
    if (minThroughput?.[q] !== undefined && tps !== undefined && tps < minThroughput[q]!) return false;
  }
  return true;
}

/** Percentiles of a metric; null when no sample has it. */
export interface Percentiles {
  p50: number;
  p75: number;
  p90: number;
  p99: number;
}

/** A snapshot for the endpoints page and for `sort`. */
export interface EndpointStats {
  circuit: CircuitState;
  /** Success share of finished attempts (rate-limited ones excluded); null with no data. */
  uptime_last_5m: number | null;
  uptime_last_30m: number | null;
  /** Over the samples kept (`routing.stats_window_ms`, 30 minutes by default), at most one day. */
  uptime_last_1d: number | null;
  /** Time to first token, ms. */
  latency_last_30m: Percentiles | null;
  /** Whole-attempt duration, ms. */
  duration_last_30m: Percentiles | null;
  /** Output tokens per second. */
  throughput_last_30m: Percentiles | null;
  requests_last_30m: number;
  last_failure_at: string | null;
  cooldown_until: string | null;
  /** Why it cools down: after a rate limit, or because the upstream sent `Retry-After` with another failure. */
  cooldown_reason: CooldownCause | null;
}

/** What started a cooldown: a rate limit (429), or a `Retry-After` sent with another failure (e.g. a 503). */
export type CooldownCause = 'rate_limit' | 'retry_after';

class EndpointHealth {
  state: CircuitState = 'closed';
  consecutiveFailures = 0;
  openedAt = 0;
  probeInFlight = false;
  cooldownUntil = 0;
  cooldownCause: CooldownCause = 'retry_after';
  lastFailureAt = 0;
  samples: Sample[] = [];
}

/** Most samples an endpoint's statistics are computed from (the newest). */
const MAX_SAMPLES = 2000;
/** Samples kept beyond {@link MAX_SAMPLES} before the array is trimmed. */
const SAMPLE_SLACK = 500;

/** The samples statistics count: the newest {@link MAX_SAMPLES}. */
function samplesOf(h: EndpointHealth): Sample[] {
  return h.samples.length > MAX_SAMPLES ? h.samples.slice(-MAX_SAMPLES) : h.samples;
}

function percentiles(values: number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p75: at(0.75), p90: at(0.9), p99: at(0.99) };
}

/**
 * One attempt's outcome as shared with other replicas. Times are relative (ms) so that clocks of
 * different machines need not agree: the receiver dates it on arrival.
 */
export type HealthEvent =
  | { endpoint: string; kind: 'success'; latencyMs: number; ttftMs: number | null; tokensPerSecond: number | null }
  | {
      endpoint: string;
      kind: 'failure';
      latencyMs: number;
      rateLimited: boolean;
      /** Remaining cooldown when the sender set one, in ms. */
      cooldownMs?: number | undefined;
      cooldownCause?: CooldownCause | undefined;
      /** Whether this failure opened the sender's breaker. */
      opened: boolean;
    };

/** Whether an endpoint may be tried now, and why not. */
export type Admission =
  | { ok: true; probe: boolean }
  | { ok: false; reason: 'circuit_open'; retryAfterMs: number }
  | { ok: false; reason: 'cooldown'; cause: CooldownCause; retryAfterMs: number };

/** Health of every endpoint, by endpoint id. */
export class HealthRegistry {
  private readonly byId = new Map<string, EndpointHealth>();
  /** The endpoint each sticky key (session, prompt_cache_key) was last served by. */
  readonly sticky: StickyRoutes;
  /** Cooldowns of single credentials of providers with `api_keys` (in-process only; see provider-credentials.ts). */
  readonly credentials: CredentialCooldowns;
  /** Called with every local outcome (set by health sharing; must be cheap: it runs on the request path). */
  onEvent: ((e: HealthEvent) => void) | undefined;
  /** Called when this process's breaker of an endpoint opens or closes (alerts; must be cheap). */
  onCircuit: ((endpoint: string, state: 'open' | 'closed') => void) | undefined;

  constructor(
    public settings: HealthSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.sticky = new StickyRoutes(now);
    this.credentials = new CredentialCooldowns(now);
  }

  private get(id: string): EndpointHealth {
    let h = this.byId.get(id);
    if (!h) {
      h = new EndpointHealth();
      this.byId.set(id, h);
    }
    return h;
  }

  /** Whether the endpoint may be tried now, without reserving a probe. */
  peek(id: string): Admission {
    const h = this.get(id);
    const now = this.now();
    if (h.cooldownUntil > now) return { ok: false, reason: 'cooldown', cause: h.cooldownCause, retryAfterMs: h.cooldownUntil - now };
    if (h.state === 'open') {
      const wait = h.openedAt + this.settings.openMs - now;
      if (wait > 0 || h.probeInFlight) return { ok: false, reason: 'circuit_open', retryAfterMs: Math.max(wait, 1000) };
      return { ok: true, probe: true };
    }
    if (h.state === 'half-open' && h.probeInFlight) return { ok: false, reason: 'circuit_open', retryAfterMs: 1000 };
    return { ok: true, probe: h.state === 'half-open' };
  }

  /** Reserve an attempt: an open circuit past its wait lets exactly one probe through. */
  admit(id: string): Admission {
    const a = this.peek(id);
    if (a.ok && a.probe) {
      const h = this.get(id);
      h.state = 'half-open';
      h.probeInFlight = true;
    }
    return a;
  }

  /** Whether the endpoint failed recently (it is then ordered last). */
  recentlyFailing(id: string): boolean {
    const h = this.byId.get(id);
    return h !== undefined && (h.state !== 'closed' || this.now() - h.lastFailureAt < this.settings.recentFailureMs);
  }

  /** An attempt succeeded. `outputTokens` over `durationMs` gives throughput. */
  recordSuccess(id: string, m: { latencyMs: number; ttftMs: number | null; outputTokens: number | null }): void {
    const h = this.get(id);
    const wasOpen = h.state !== 'closed';
    h.state = 'closed';
    h.consecutiveFailures = 0;
    h.probeInFlight = false;
    if (wasOpen) this.onCircuit?.(id, 'closed');
    const genMs = m.ttftMs !== null ? m.latencyMs - m.ttftMs : m.latencyMs;
    const tps = m.outputTokens !== null && m.outputTokens > 1 && genMs > 0 ? (m.outputTokens * 1000) / genMs : null;
    this.push(h, { at: this.now(), ok: true, latencyMs: m.latencyMs, ttftMs: m.ttftMs, tokensPerSecond: tps });
    this.onEvent?.({ endpoint: id, kind: 'success', latencyMs: m.latencyMs, ttftMs: m.ttftMs, tokensPerSecond: tps });
  }

  /**
   * An attempt failed for a reason that concerns the endpoint. A `retryAfterMs` (already capped
   * by the caller) sets a cooldown, whose cause is a rate limit only when `rateLimited`; rate
   * limits do not count against uptime.
   */
  recordFailure(id: string, m: { latencyMs: number; rateLimited: boolean; retryAfterMs?: number | undefined }): void {
    const h = this.get(id);
    const now = this.now();
    if (m.retryAfterMs !== undefined && m.retryAfterMs > 0 && now + m.retryAfterMs >= h.cooldownUntil) {
      h.cooldownUntil = now + m.retryAfterMs;
      h.cooldownCause = m.rateLimited ? 'rate_limit' : 'retry_after';
    }
    h.probeInFlight = false;
    let opened = false;
    if (!m.rateLimited) {
      h.lastFailureAt = now;
      h.consecutiveFailures++;
      if (h.state === 'half-open' || h.consecutiveFailures >= this.settings.failureThreshold) {
        opened = h.state !== 'open';
        h.state = 'open';
        h.openedAt = now;
      }
      this.push(h, { at: now, ok: false, latencyMs: m.latencyMs, ttftMs: null, tokensPerSecond: null });
      if (opened) this.onCircuit?.(id, 'open');
    }
    if (this.onEvent) {
      const cooling = h.cooldownUntil > now;
      this.onEvent({ endpoint: id, kind: 'failure', latencyMs: m.latencyMs, rateLimited: m.rateLimited, cooldownMs: cooling ? h.cooldownUntil - now : undefined, cooldownCause: cooling ? h.cooldownCause : undefined, opened });
    }
  }

  /**
   * An outcome on another replica: its samples join the statistics, its failures count toward
   * this breaker, a breaker it opened opens here too (from now, for `openMs`), its cooldown
   * applies here, and its success closes this breaker (unless a local probe is still out).
   */
  applyRemote(e: HealthEvent): void {
    const h = this.get(e.endpoint);
    const now = this.now();
    if (e.kind === 'success') {
      if (!h.probeInFlight) h.state = 'closed';
      h.consecutiveFailures = 0;
      this.push(h, { at: now, ok: true, latencyMs: e.latencyMs, ttftMs: e.ttftMs, tokensPerSecond: e.tokensPerSecond });
      return;
    }
    if (e.cooldownMs !== undefined && e.cooldownMs > 0 && now + e.cooldownMs >= h.cooldownUntil) {
      h.cooldownUntil = now + e.cooldownMs;
      h.cooldownCause = e.cooldownCause ?? 'retry_after';
    }
    if (e.rateLimited) return;
    h.lastFailureAt = now;
    h.consecutiveFailures++;
    if (e.opened || h.consecutiveFailures >= this.settings.failureThreshold) {
      if (h.state !== 'open') h.openedAt = now;
      h.state = 'open';
    }
    this.push(h, { at: now, ok: false, latencyMs: e.latencyMs, ttftMs: null, tokensPerSecond: null });
  }

  /** A probe ended without a verdict (client gone, bad request): free the probe slot. */
  release(id: string): void {
    this.get(id).probeInFlight = false;
  }

  /**
   * Keep a sample: at most the newest {@link MAX_SAMPLES} within the window count. Trimming is
   * amortised (the array may hold up to {@link SAMPLE_SLACK} more, which {@link samplesOf}
   * leaves out), so a busy endpoint does not copy its whole window on every request.
   */
  private push(h: EndpointHealth, s: Sample): void {
    const samples = h.samples;
    samples.push(s);
    if (samples.length > MAX_SAMPLES + SAMPLE_SLACK) samples.splice(0, samples.length - MAX_SAMPLES);
    const cutoff = s.at - this.settings.windowMs;
    if (samples[0]!.at < cutoff) {
      let drop = 0;
      while (drop < samples.length && samples[drop]!.at < cutoff) drop++;
      samples.splice(0, drop);
    }
  }

  /** Statistics of one endpoint over the window. */
  stats(id: string): EndpointStats {
    const h = this.get(id);
    const now = this.now();
    const samples = samplesOf(h);
    const within = (ms: number) => samples.filter((s) => s.at >= now - ms);
    const uptime = (ms: number) => {
      const s = within(ms);
      return s.length === 0 ? null : s.filter((x) => x.ok).length / s.length;
    };
    const recent = within(30 * 60_000);
    const ok = recent.filter((s) => s.ok);
    return {
      circuit: this.peek(id).ok || h.state === 'closed' ? h.state : 'open',
      uptime_last_5m: uptime(5 * 60_000),
      uptime_last_30m: uptime(30 * 60_000),
      uptime_last_1d: uptime(24 * 60 * 60_000),
      latency_last_30m: percentiles(ok.flatMap((s) => (s.ttftMs === null ? [] : [s.ttftMs]))),
      duration_last_30m: percentiles(ok.map((s) => s.latencyMs)),
      throughput_last_30m: percentiles(ok.flatMap((s) => (s.tokensPerSecond === null ? [] : [s.tokensPerSecond]))),
      requests_last_30m: recent.length,
      last_failure_at: h.lastFailureAt ? new Date(h.lastFailureAt).toISOString() : null,
      cooldown_until: h.cooldownUntil > now ? new Date(h.cooldownUntil).toISOString() : null,
      cooldown_reason: h.cooldownUntil > now ? h.cooldownCause : null,
    };
  }
}
