import type { McpServerConfig } from '../config/schema.js';

/**
 * Tool-name patterns and the views built from them: which tools a configured server offers
 * (`mcp_servers[].allowed_tools` / `denied_tools`, over the upstream's own names) and which a
 * key may see and call (`allowed_tools` of the key, over namespaced `server__tool` names).
 * A pattern is a name in which `*` matches any run of characters (none included); nothing
 * else is special.
 */

/** The separator of a namespaced name: `weather__get_forecast`. Server ids never contain it. */
export const NAMESPACE_SEPARATOR = '__';

const compiled = new Map<string, RegExp>();

/** Whether `name` matches the pattern (`*` = any run of characters, the rest literal, case-sensitive). */
export function matchesPattern(pattern: string, name: string): boolean {
  let re = compiled.get(pattern);
  if (re === undefined) {
    re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&')).join('.*')}$`);
    if (compiled.size > 10_000) compiled.clear();
    compiled.set(pattern, re);
  }
  return re.test(name);
}

/** `server__tool` for a server id and one of its upstream names. */
export function namespaced(serverId: string, name: string): string {
  return `${serverId}${NAMESPACE_SEPARATOR}${name}`;
}

/**
 * The server id and upstream name of a namespaced name, split on the first `__` (server ids have
 * none; an upstream name may), or undefined when the name has no separator.
 */
export function splitNamespaced(name: string): { serverId: string; name: string } | undefined {
  const at = name.indexOf(NAMESPACE_SEPARATOR);
  if (at <= 0) return undefined;
  return { serverId: name.slice(0, at), name: name.slice(at + NAMESPACE_SEPARATOR.length) };
}

/**
 * Why a server hides one of its upstream tools (its `allowed_tools`, then `denied_tools`), or
 * undefined when it offers it.
 */
export function serverHides(server: Pick<McpServerConfig, 'id' | 'allowed_tools' | 'denied_tools'>, tool: string): string | undefined {
  if (server.allowed_tools.length > 0 && !server.allowed_tools.some((p) => matchesPattern(p, tool))) return `tool "${tool}" is not in the allowed_tools of MCP server "${server.id}" (gateway config)`;
  const denied = server.denied_tools.find((p) => matchesPattern(p, tool));
  if (denied !== undefined) return `tool "${tool}" of MCP server "${server.id}" matches its denied_tools pattern "${denied}" (gateway config)`;
  return undefined;
}

/**
 * Whether a key's `allowed_tools` lets it use the namespaced tool `server__tool`: an empty list
 * allows everything; a pattern without `__` names whole servers (`weather`, `git*`), one with it
 * names tools (`weather__get_*`).
 */
export function keyAllowsTool(allowed: readonly string[], serverId: string, tool: string): boolean {
  if (allowed.length === 0) return true;
  const full = namespaced(serverId, tool);
  return allowed.some((p) => (p.includes(NAMESPACE_SEPARATOR) ? matchesPattern(p, full) : matchesPattern(p, serverId)));
}

/**
 * Whether a key's `allowed_tools` names anything of the server (some pattern's server part
 * matches its id): such a key also sees the server's resources and prompts. An empty list sees
 * every server.
 */
export function keySeesServer(allowed: readonly string[], serverId: string): boolean {
  if (allowed.length === 0) return true;
  return allowed.some((p) => {
    const server = p.includes(NAMESPACE_SEPARATOR) ? p.slice(0, p.indexOf(NAMESPACE_SEPARATOR)) : p;
    // `*__read` names a tool of every server; `weather*` whole servers.
    return matchesPattern(server, serverId);
  });
}
