import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { GenerationWriter } from '../../store/generation-writer.js';
import type { McpCallWriter } from '../../store/mcp-call-writer.js';
import { KeyedCounter, KeyedHistogram } from './keyed-metrics.js';

/** What the overload check (server/overload.ts) reports on each scrape. */
export interface OverloadGauges {
  readonly inFlight: number;
  readonly streams: number;
  /** In ms. */
  eventLoopDelayMs(): number;
  /** 0–1. */
  eventLoopUtilization(): number;
}

/**
 * Prometheus metrics of one gateway (`GET /metrics`). Durations are seconds, as Prometheus
 * conventions ask; token and cost counters are totals since start. The series every generation
 * updates are {@link KeyedCounter}s and {@link KeyedHistogram}s (cheap per update); the rest are
 * prom-client's own.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly generations = new KeyedCounter({ name: 'opinference_generations_total', help: 'Generations by served model, provider and status.', labelNames: ['model', 'provider', 'status', 'code'] as const, registers: [this.registry] });
  readonly tokens = new KeyedCounter({ name: 'opinference_tokens_total', help: 'Tokens by served model, provider and direction (prompt|completion).', labelNames: ['model', 'provider', 'direction'] as const, registers: [this.registry] });
  readonly costUsd = new KeyedCounter({ name: 'opinference_cost_usd_total', help: 'Cost in USD by served model and provider.', labelNames: ['model', 'provider'] as const, registers: [this.registry] });
  readonly latency = new KeyedHistogram({ name: 'opinference_generation_duration_seconds', help: 'Whole generation duration.', labelNames: ['model', 'streamed'] as const, buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120], registers: [this.registry] });
  readonly ttft = new KeyedHistogram({ name: 'opinference_time_to_first_token_seconds', help: 'Time to first token of streamed generations.', labelNames: ['model'] as const, buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30], registers: [this.registry] });
  readonly attempts = new KeyedCounter({ name: 'opinference_upstream_attempts_total', help: 'Upstream attempts by endpoint and outcome code (ok or an error code).', labelNames: ['endpoint', 'code'] as const, registers: [this.registry] });
  readonly poolWait = new Histogram({ name: 'opinference_upstream_pool_wait_seconds', help: 'Time upstream calls waited for a local connection slot (all max_connections busy), by provider; calls that found a free slot are not observed.', labelNames: ['provider'] as const, buckets: [0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30], registers: [this.registry] });
  readonly inFlight = new Gauge({ name: 'opinference_in_flight_generations', help: 'Generations being served now.', registers: [this.registry] });
  readonly recordsDropped = new Counter({ name: 'opinference_records_dropped_total', help: 'Generation records given up on, by reason (invalid_record, queue_full, shutdown).', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly recordWriteFailures = new Counter({ name: 'opinference_record_write_failures_total', help: 'Failed writes of generation records (each is retried), by error code (e.g. SQLITE_FULL).', labelNames: ['code'] as const, registers: [this.registry] });
  readonly recordWrite = new Histogram({ name: 'opinference_record_write_seconds', help: 'Duration of each transaction writing a batch of generation records (start to commit).', buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5], registers: [this.registry] });
  readonly recordsCommitLag = new Histogram({ name: 'opinference_records_commit_lag_seconds', help: 'Per written batch of generation records, how long its oldest record waited from its response to its commit: the window a SIGKILL loses.', buckets: [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5], registers: [this.registry] });
  readonly recordsClamped = new Counter({ name: 'opinference_records_clamped_total', help: 'Generation records written with implausible usage or cost clamped (usage_clamped).', registers: [this.registry] });
  readonly recordsQueued: Gauge = new Gauge({ name: 'opinference_records_queued', help: 'Generation records waiting to be written.', registers: [this.registry], collect: () => this.writer && this.recordsQueued.set(this.writer.queued) });
  readonly recordsWritable: Gauge = new Gauge({ name: 'opinference_records_writable', help: '1 while generation records can be written, 0 while writes fail or the database file is gone.', registers: [this.registry], collect: () => this.writer && this.recordsWritable.set(this.writer.problem === null ? 1 : 0) });
  private writer: GenerationWriter | undefined;
  // The OpenTelemetry GenAI instruments under their Prometheus names (dots to underscores, unit suffix).
  readonly genAiTokenUsage = new KeyedHistogram({ name: 'gen_ai_client_token_usage', help: 'Tokens per generation by gen_ai_token_type (input|output).', labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_response_model', 'gen_ai_token_type'] as const, buckets: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576], registers: [this.registry] });
  readonly genAiDuration = new KeyedHistogram({ name: 'gen_ai_server_request_duration_seconds', help: 'Generation duration, by outcome (error_type empty on success).', labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_response_model', 'error_type'] as const, buckets: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92], registers: [this.registry] });
  readonly genAiTtft = new KeyedHistogram({ name: 'gen_ai_server_time_to_first_token_seconds', help: 'Time to the first generated token of streamed generations.', labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_response_model'] as const, buckets: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10], registers: [this.registry] });
  readonly genAiTimePerOutputToken = new KeyedHistogram({ name: 'gen_ai_server_time_per_output_token_seconds', help: 'Time per output token after the first, of streamed generations.', labelNames: ['gen_ai_operation_name', 'gen_ai_provider_name', 'gen_ai_response_model'] as const, buckets: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5], registers: [this.registry] });
  /** Spans dropped because the OTLP export queue was full; read from the exporter when scraped. */
  readonly droppedSpans = new Gauge({ name: 'opinference_telemetry_spans_dropped', help: 'Spans dropped since start because the OTLP export queue (telemetry.max_queue_size) was full.', registers: [this.registry] });
  /** Cache lookups by result (hit|miss). */
  readonly cacheLookups = new Counter({ name: 'opinference_cache_lookups_total', help: 'Response cache lookups by result (hit|miss).', labelNames: ['result'] as const, registers: [this.registry] });
  /** Generation requests refused with `gateway_overloaded`, by reason (event_loop_delay, event_loop_utilization, in_flight, streams). */
  readonly overloadRefusals = new Counter({ name: 'opinference_overload_refusals_total', help: 'Generation requests refused with gateway_overloaded (server.overload), by reason (event_loop_delay|event_loop_utilization|in_flight|streams).', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly overloadInFlight: Gauge = new Gauge({ name: 'opinference_overload_in_flight_requests', help: 'Generation requests admitted and not yet closed (compared with server.overload.max_in_flight_requests).', registers: [this.registry], collect: () => this.overload && this.overloadInFlight.set(this.overload.inFlight) });
  readonly overloadStreams: Gauge = new Gauge({ name: 'opinference_overload_streams', help: 'Streamed generation requests held now (compared with server.overload.max_streams).', registers: [this.registry], collect: () => this.overload && this.overloadStreams.set(this.overload.streams) });
  readonly overloadLoopDelay: Gauge = new Gauge({ name: 'opinference_overload_event_loop_delay_seconds', help: 'Mean event-loop delay over the last sample interval (server.overload.sample_interval_ms), as the overload check reads it.', registers: [this.registry], collect: () => this.overload && this.overloadLoopDelay.set(this.overload.eventLoopDelayMs() / 1000) });
  readonly overloadLoopUtilization: Gauge = new Gauge({ name: 'opinference_overload_event_loop_utilization', help: 'Event-loop utilization (0-1) over the last sample interval, as the overload check reads it.', registers: [this.registry], collect: () => this.overload && this.overloadLoopUtilization.set(this.overload.eventLoopUtilization()) });
  private overload: OverloadGauges | undefined;
  // MCP tool calls (issue 22 item 4): server is an `mcp_servers` id ('' for a name of no server), tool the upstream's name ('' then).
  readonly mcpToolCalls = new KeyedCounter({ name: 'opinference_mcp_tool_calls_total', help: 'MCP tools/call through the gateway by server, tool and status (ok|tool_error|error|refused).', labelNames: ['server', 'tool', 'status'] as const, registers: [this.registry] });
  readonly mcpToolCallDuration = new KeyedHistogram({ name: 'opinference_mcp_tool_call_duration_seconds', help: 'Duration of MCP tools/call through the gateway (receipt to answer), by server and tool; refusals are not observed.', labelNames: ['server', 'tool'] as const, buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [this.registry] });
  readonly mcpRecordsDropped = new Counter({ name: 'opinference_mcp_call_records_dropped_total', help: 'MCP call records given up on, by reason (invalid_record, queue_full, shutdown).', labelNames: ['reason'] as const, registers: [this.registry] });
  readonly mcpRecordWriteFailures = new Counter({ name: 'opinference_mcp_call_record_write_failures_total', help: 'Failed writes of MCP call records (each is retried), by error code.', labelNames: ['code'] as const, registers: [this.registry] });
  readonly mcpRecordsQueued: Gauge = new Gauge({ name: 'opinference_mcp_call_records_queued', help: 'MCP call records waiting to be written.', registers: [this.registry], collect: () => this.mcpWriter && this.mcpRecordsQueued.set(this.mcpWriter.queued) });
  private mcpWriter: McpCallWriter | undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'opinference_' });
  }

  /** Report the overload check's counters and event-loop sample on each scrape. */
  observeOverload(source: OverloadGauges): void {
    this.overload = source;
  }

  /** Count the MCP call writer's failures and drops, and report its queue on each scrape. */
  observeMcpWriter(writer: McpCallWriter): void {
    writer.hooks = {
      writeFailed: (code) => this.mcpRecordWriteFailures.inc({ code }),
      dropped: (count, reason) => this.mcpRecordsDropped.inc({ reason }, count),
    };
    this.mcpWriter = writer;
  }

  /** Count a record writer's failures, drops and clamps, time its batches, and report its queue on each scrape. */
  observeWriter(writer: GenerationWriter): void {
    writer.hooks = {
      writeFailed: (code) => this.recordWriteFailures.inc({ code }),
      dropped: (count, reason) => this.recordsDropped.inc({ reason }, count),
      clamped: () => this.recordsClamped.inc(),
      committed: (writeMs, lagMs) => {
        this.recordWrite.observe(writeMs / 1000);
        this.recordsCommitLag.observe(lagMs / 1000);
      },
    };
    this.writer = writer;
  }
}
