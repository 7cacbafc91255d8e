import { z } from 'zod';

/**
 * `audit` and `alerts` of the config file (issue 23 items 4 and 5; docs/governance.md). Times
 * in ms, retention in days.
 */

/** The event types alerts are sent for. */
export const ALERT_EVENT_TYPES = ['budget.threshold', 'breaker.opened', 'breaker.closed', 'records.unwritable', 'records.writable', 'error_rate.high', 'error_rate.normal'] as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[number];

/** An environment variable's name (the HMAC secret is read from it, never written in a file or the database). */
export const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');

/** One webhook: where alerts go, in which format, signed with which secret, for which events. */
export const alertWebhookSchema = z
  .object({
    /** Stable id (deliveries name it); config ids may not start with `whk_` (those are the API's). */
    id: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,63}$/i, 'must be 1-64 letters, digits, ".", "_" or "-"').refine((v) => !v.startsWith('whk_'), 'ids starting with whk_ are those of webhooks made through the API'),
    url: z.string().url('must be an absolute http(s) URL').refine((u) => /^https?:\/\//i.test(u), 'must be an http(s) URL'),
    /** `json`: `{type, created_at, data}`; `slack`: a Slack incoming-webhook message (`text` and `blocks`). */
    format: z.enum(['json', 'slack']).default('json'),
    /** Environment variable with the HMAC-SHA256 secret; unset = unsigned. */
    secret_env: envName.optional(),
    /** Event types sent to it; empty = all. */
    events: z.array(z.enum(ALERT_EVENT_TYPES)).default([]),
  })
  .strict();

export const alertsSchema = z
  .object({
    webhooks: z.array(alertWebhookSchema).default([]),
    /** Fractions of a key's or team's budget whose crossing is an alert, once per budget period each. */
    budget_fractions: z.array(z.number().gt(0).max(1)).max(20).default([0.5, 0.8, 1]),
    /** Most attempts of one delivery (the first and its retries). */
    max_attempts: z.number().int().min(1).max(50).default(8),
    /** First retry delay, in ms; doubled per failed attempt up to `retry_max_ms`. */
    retry_base_ms: z.number().int().min(1).max(3_600_000).default(1_000),
    retry_max_ms: z.number().int().min(1).max(86_400_000).default(300_000),
    /** Longest wait for a receiver's answer, in ms. */
    timeout_ms: z.number().int().min(100).max(120_000).default(10_000),
    /** How often each process looks for deliveries due (its own retries, and those a stopped replica left), in ms. */
    sweep_interval_ms: z.number().int().min(50).max(3_600_000).default(15_000),
    /**
     * A model's error rate (failed generations answered 5xx, over those finished, as this
     * process saw them within `window_ms`) at or over `threshold` with at least `min_requests`
     * is `error_rate.high`; back under it, `error_rate.normal`. Null = not watched.
     */
    error_rate: z
      .object({
        threshold: z.number().gt(0).max(1),
        min_requests: z.number().int().min(1).max(1_000_000).default(20),
        window_ms: z.number().int().min(10_000).max(86_400_000).default(300_000),
      })
      .strict()
      .nullable()
      .default(null),
    /** Days alert events and deliveries are kept (applied by the retention purge). */
    retention_days: z.number().int().min(1).max(36_500).default(30),
  })
  .strict()
  .superRefine((a, ctx) => {
    const seen = new Set<string>();
    a.webhooks.forEach((w, i) => {
      if (seen.has(w.id)) ctx.addIssue({ code: 'custom', path: ['webhooks', i, 'id'], message: `duplicate webhook id ${JSON.stringify(w.id)}` });
      seen.add(w.id);
    });
  });

export const auditSchema = z
  .object({
    /** Days audit rows are kept (applied by the retention purge). */
    retention_days: z.number().int().min(1).max(36_500).default(365),
  })
  .strict();

export type AlertsConfig = z.infer<typeof alertsSchema>;
export type AlertWebhookConfig = z.infer<typeof alertWebhookSchema>;
