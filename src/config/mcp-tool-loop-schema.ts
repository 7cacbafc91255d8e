import { z } from 'zod';

/**
 * `mcp_tool_loop`: the bounds of the tool loop the gateway runs for a Responses request that
 * names a configured MCP server as a tool (`{"type": "mcp", "server_label": …}`, docs/mcp.md):
 * at most `max_rounds` model turns, and no new turn or tool call once `max_time_ms` have passed
 * since the request arrived (the last turn is then asked to answer without tools).
 */
export const mcpToolLoopSchema = z
  .object({
    /** Most model turns one request makes (the last one is offered no tool call); default 8. */
    max_rounds: z.number().int().min(1).max(64).default(8),
    /** Wall-clock budget of the whole loop, in ms; default 120000 (2 minutes). */
    max_time_ms: z.number().int().min(1000).max(3_600_000).default(120_000),
  })
  .strict();

export type McpToolLoopConfig = z.infer<typeof mcpToolLoopSchema>;
