import type { ApiKey } from '../store/keys.js';
import type { McpKeyView } from './mcp-gateway.js';

/**
 * What the gateway's call observer (server/mcp-call-observer.ts) reads of the key behind a
 * session: carried as {@link McpKeyView.caller}, never read by the gateway itself.
 */
export interface McpCaller {
  /** The admin key (`OP_ADMIN_KEY`): its records have no key id, no limit applies. */
  isAdmin: boolean;
  teamId: string | null;
  /** `none` (no argument or result text is recorded) or days (kept that long). */
  retention: 'none' | number;
  /** The key's `mcp_calls_per_minute`, or null for none. */
  callsPerMinute: number | null;
}

/**
 * The MCP gateway's view of a key: its `allowed_tools` and `max_tools` (the admin key sees
 * every tool, uncapped) and, for the observer, its team, retention (the key's, else its team's,
 * else `defaultRetention`, the config's `retention`) and `mcp_calls_per_minute`.
 * `capTools: false` leaves the list uncapped (the Responses tool loop lists every tool itself);
 * `retention` is a request's own (`op.retention` of the Responses request whose loop calls).
 */
export function mcpKeyView(key: ApiKey, defaultRetention: 'none' | number, options: { capTools?: boolean; retention?: 'none' | number } = {}): McpKeyView {
  const caller: McpCaller = {
    isAdmin: key.isAdmin,
    teamId: key.team?.id ?? null,
    retention: options.retention ?? key.settings.retention ?? key.team?.settings.retention ?? defaultRetention,
    callsPerMinute: key.isAdmin ? null : key.settings.mcp_calls_per_minute,
  };
  return {
    id: key.id,
    allowedTools: key.isAdmin ? [] : key.settings.allowed_tools,
    maxTools: key.isAdmin || options.capTools === false ? null : key.settings.max_tools,
    caller,
  };
}
