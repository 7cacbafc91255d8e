import { z } from 'zod';

/** OpenAI's documented bound of a batch input file: 200 MB. @see https://platform.openai.com/docs/guides/batch */
export const OPENAI_BATCH_FILE_BYTES = 200 * 1024 * 1024;

/**
 * `batches`: the Files API and the batches the gateway runs itself (docs/batches.md). Lines are
 * queued in the database and run by a worker pool in every gateway process, through the same
 * pipeline as interactive requests, at lower priority.
 */
export const batchesSchema = z
  .object({
    /** Run batch lines in this process (the APIs answer either way); default true. */
    enabled: z.boolean().default(true),
    /** Largest file `POST /v1/files` accepts, in bytes; default 200 MB (OpenAI's bound of a batch input file). */
    max_file_bytes: z.number().int().min(1024).max(2 * 1024 * 1024 * 1024).default(OPENAI_BATCH_FILE_BYTES),
    /** Days an uploaded file is kept when the upload sets no `expires_after`; default 30 (OpenAI's for purpose `batch`). */
    file_retention_days: z.number().int().min(1).max(3650).default(30),
    /** Days a batch's results (output and error files, Anthropic results) are kept after it ends; default 29 (Anthropic's). */
    result_retention_days: z.number().int().min(1).max(3650).default(29),
    /** Most batch lines one process runs at once; default 16. */
    concurrency: z.number().int().min(1).max(1024).default(16),
    /** Most lines of one key one process runs at once; default 8. */
    per_key: z.number().int().min(1).max(1024).default(8),
    /** Most lines for one model (the line's `model`) one process runs at once; default 8. */
    per_model: z.number().int().min(1).max(1024).default(8),
    /**
     * Most lines one process runs while it serves interactive traffic (a generation request in
     * flight now or in the last 250 ms): batch lines yield to it; default 2 (0: none).
     */
    busy_concurrency: z.number().int().min(0).max(1024).default(2),
    /**
     * Interactive requests in flight at which this process claims no more batch lines (batch
     * traffic yields to interactive traffic); default 64.
     */
    yield_in_flight: z.number().int().min(1).max(100_000).default(64),
    /** How long a claimed line is held before another process may take it over, in ms; default 120000. */
    lease_ms: z.number().int().min(1000).max(86_400_000).default(120_000),
    /** How often an idle worker looks for lines, in ms; default 500. */
    poll_interval_ms: z.number().int().min(10).max(60_000).default(500),
    /** Runs of a rate-limited line before it is answered with its 429; default 50. */
    max_retries: z.number().int().min(0).max(10_000).default(50),
    /** Wait before running a rate-limited line again when the refusal names no Retry-After, in ms; default 1000. */
    retry_delay_ms: z.number().int().min(0).max(3_600_000).default(1_000),
  })
  .strict();

export type BatchesConfig = z.infer<typeof batchesSchema>;
