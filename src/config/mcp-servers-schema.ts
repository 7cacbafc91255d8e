import { z } from 'zod';

/**
 * `mcp_servers`: the upstream MCP servers the gateway's `/mcp` endpoint aggregates (issue 22).
 * A config fragment kept out of `schema.ts` (see the folder README). Values may use `${VAR}`
 * substitution like every string of the file (load.ts), which is how header secrets and stdio
 * environments are kept out of the file. A stdio server's process is started only from here:
 * nothing a request sends can name a command.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/transports
 */

/** Ids a server may not take: the paths of the legacy transport under `/mcp/`. */
export const RESERVED_MCP_IDS: readonly string[] = ['sse', 'messages'];

/**
 * A server id: the namespace of its tools (`<id>__<tool>`), so letters, digits, `_` and `-`
 * only (the tool-name rules of OpenAI and Anthropic refuse dots), and never `__` (the separator).
 */
export const mcpServerId = z
  .string()
  .min(1)
  .max(48, 'must be at most 48 characters (the namespaced tool names must stay within 64)')
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'must be letters, digits, "_" or "-" (starting with a letter or digit)')
  .refine((id) => !id.includes('__'), 'must not contain "__": it separates the server id from the tool name')
  .refine((id) => !RESERVED_MCP_IDS.includes(id), `must not be ${'"sse" or "messages"'}: /mcp/sse and /mcp/messages are the gateway's legacy HTTP+SSE endpoints`);

/**
 * A tool pattern: a name with `*` matching any run of characters (`get_*`, `*`). Per server the
 * patterns match the upstream's own tool names; per key, `server__tool` names or a server id
 * alone (every tool of that server).
 */
export const toolPattern = z.string().min(1).max(200).regex(/^[A-Za-z0-9_.*/-]+$/, 'must be a tool name or pattern: letters, digits, "_", "-", ".", "/" and "*"');

/** The header rules of `schema.ts`, passed in so this file need not import it (which imports this). */
export interface HeaderRules {
  name: z.ZodType<string>;
  value: z.ZodType<string>;
}

/**
 * `mcp_servers[].oauth`: the gateway authenticates to a remote MCP server as an OAuth 2.1
 * client with the client credentials grant (machine to machine): on the server's 401 it
 * discovers the authorization server (protected resource metadata, RFC 9728; authorization
 * server metadata, RFC 8414), asks `issuer`'s token endpoint for an access token with
 * `client_id` and `client_secret` (HTTP Basic), sends it as `Authorization: Bearer`, and asks
 * again when the server refuses it (expired). Done by the official SDK's
 * `ClientCredentialsProvider`; `issuer` is required so the secret is only ever sent to that
 * authorization server, whatever the MCP server advertises.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization
 */
const oauthSchema = z
  .object({
    grant: z.literal('client_credentials').default('client_credentials'),
    /** The authorization server the credentials belong to (its issuer URL, exactly as its metadata says). */
    issuer: z.string().url('must be an absolute http(s) URL').refine((u) => /^https?:\/\//i.test(u), 'must start with http:// or https://'),
    client_id: z.string().min(1),
    /** Use `${VAR}`: a secret. */
    client_secret: z.string().min(1),
    /** Space-separated scopes to ask for (default: none, the server's default). */
    scope: z.string().min(1).optional(),
  })
  .strict();

/** Settings every transport shares. */
const common = {
  id: mcpServerId,
  /** Patterns over the upstream's tool names this server offers (empty: all of them). */
  allowed_tools: z.array(toolPattern).max(500).default([]),
  /** Patterns over the upstream's tool names never offered (applied after `allowed_tools`). */
  denied_tools: z.array(toolPattern).max(500).default([]),
  /** Longest wait for one upstream request (connect and initialise included), in ms. */
  timeout_ms: z.number().int().min(1).max(3_600_000).default(60_000),
  /** Largest upstream result, in bytes of JSON; a larger one is refused with an MCP error. */
  max_result_bytes: z.number().int().min(1024).max(1024 * 1024 * 1024).default(10 * 1024 * 1024),
};

/**
 * The schema of `mcp_servers` (a list, ids unique: checked in load.ts), built with the header
 * rules of `schema.ts`.
 */
export function mcpServersSchema(headers: HeaderRules) {
  const remote = (transport: 'streamable_http' | 'sse') =>
    z
      .object({
        ...common,
        transport: z.literal(transport),
        /** The server's URL (Streamable HTTP: its one endpoint; SSE: the GET stream). */
        url: z.string().url('must be an absolute http(s) URL').refine((u) => /^https?:\/\//i.test(u), 'must start with http:// or https://'),
        /** Headers sent on every upstream request (credentials: use `${VAR}`). Never the client's gateway key. */
        headers: z.record(headers.name, headers.value).default({}),
        /** OAuth 2.1 client credentials the gateway uses for this server (its own identity, never the client's). */
        oauth: oauthSchema.optional(),
      })
      .strict();
  const stdio = z
    .object({
      ...common,
      transport: z.literal('stdio'),
      /** The program to run (looked up in PATH), started by the gateway on first use. */
      command: z.string().min(1),
      args: z.array(z.string()).default([]),
      /** The child's environment beside the SDK's safe defaults (PATH, HOME, …); the gateway's own environment is not passed on. */
      env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'), z.string()).default({}),
      /** Working directory of the child (default: the gateway's). */
      cwd: z.string().min(1).optional(),
    })
    .strict();
  return z.array(z.discriminatedUnion('transport', [remote('streamable_http'), remote('sse'), stdio])).default([]);
}

/** One configured upstream MCP server, defaults applied. */
export type McpServerConfig = z.infer<ReturnType<typeof mcpServersSchema>>[number];
