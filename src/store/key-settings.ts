import { z } from 'zod';

/**
 * What a key may do, stored as JSON in `api_keys.settings`. Field names follow OpenRouter's key
 * API where it has them (`limit` in USD, `limit_reset`).
 */
export const keySettingsSchema = z
  .object({
    /** Credit limit in USD as an exact decimal string, or null for none. */
    limit: z.string().regex(/^\d+(\.\d{1,6})?$/, 'must be a non-negative decimal number of USD with at most 6 decimals, e.g. 1 or 0.25').nullable().default(null),
    limit_reset: z.enum(['daily', 'weekly', 'monthly', 'never']).default('never'),
    rate_limit: z
      .object({
        requests_per_minute: z.number().int().min(1).nullable().default(null),
        tokens_per_minute: z.number().int().min(1).nullable().default(null),
      })
      .strict()
      .default({}),
    /** Model ids this key may use; empty = all. */
    allowed_models: z.array(z.string().min(1)).default([]),
    /**
     * MCP tools this key may list and call (`/mcp`, issue 22): patterns over `server__tool` with
     * `*` for any run of characters (`weather__get_*`), or a server id alone for all its tools
     * (`weather`, the same as `weather__*`); empty = every tool of every server.
     */
    allowed_tools: z.array(z.string().min(1).max(200).regex(/^[A-Za-z0-9_.*/-]+$/, 'must be a tool name or pattern: letters, digits, "_", "-", ".", "/" and "*"')).max(500).default([]),
    /**
     * Most tools one `tools/list` shows this key (the first ones in server order); past it the
     * gateway adds its `search_tools` tool to find the rest. null = no cap.
     */
    max_tools: z.number().int().min(1).max(10_000).nullable().default(null),
    /**
     * Most MCP `tools/call`s this key makes per minute (`/mcp`, `/mcp/{server}` and the
     * Responses `mcp` tool loop together; a fixed one-minute window in the limit store, exact
     * across replicas with Redis); null = no limit. Past it a call is refused with `mcp_rate_limited`.
     */
    mcp_calls_per_minute: z.number().int().min(1).max(1_000_000_000).nullable().default(null),
    /** Default retention of this key's generations (`none` or days); null = the gateway's. */
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).nullable().default(null),
    /**
     * Caps on each end user of this key (the request's `user`, or `x-op-user`; issue 23 item
     * 2), each null for none: requests and tokens per minute, and USD per UTC day (an exact
     * decimal string, like `limit`).
     */
    end_user_limits: z
      .object({
        requests_per_minute: z.number().int().min(1).nullable().default(null),
        tokens_per_minute: z.number().int().min(1).nullable().default(null),
        usd_per_day: z.string().regex(/^\d+(\.\d{1,6})?$/, 'must be a non-negative decimal number of USD with at most 6 decimals').nullable().default(null),
      })
      .strict()
      .default({}),
    /** Cache every answer of this key (true, or a TTL in seconds); null = only when a request or model asks. */
    cache: z.union([z.boolean(), z.number().int().min(1)]).nullable().default(null),
  })
  .strict();

export type KeySettings = z.infer<typeof keySettingsSchema>;

/** Parse stored settings; unknown or broken JSON falls back to no limits (and is logged by callers). */
export function parseKeySettings(json: string): KeySettings {
  try {
    return keySettingsSchema.parse(JSON.parse(json || '{}'));
  } catch {
    return keySettingsSchema.parse({});
  }
}
