import { GatewayError } from '../../../errors/gateway-error.js';

/**
 * The Responses API's hosted `mcp` tool, served by the gateway over its own MCP servers
 * (`mcp_servers`, docs/mcp.md): the request shape it accepts, the function tools the model is
 * offered instead, and OpenAI's `mcp_list_tools` / `mcp_call` output items. Pure: the loop that
 * runs the model and the calls is pipeline/stages/mcp-tool-loop.ts.
 * @see https://platform.openai.com/docs/guides/tools-remote-mcp
 */

/** One `{"type": "mcp"}` entry of a request's `tools`, checked. */
export interface McpToolRequest {
  /** Its position in `tools` (for `param`). */
  index: number;
  /** A configured server id (`mcp_servers[].id`). */
  serverLabel: string;
  /** The tool names it may use (the server's own names); null = every tool the key may use. */
  allowedTools: ReadonlySet<string> | null;
  /** `allowed_tools.read_only`: only tools annotated `readOnlyHint: true`. */
  readOnly: boolean;
  /** `server_description`, added to each tool's description for the model. */
  description: string | undefined;
}

/** A tool an MCP server listed (the SDK's `Tool`, the fields read here). */
export interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown> | undefined;
}

/** Fields of OpenAI's `mcp` tool that name a server or credentials: the gateway takes them only from its config. */
const FOREIGN_FIELDS = ['server_url', 'connector_id', 'tunnel_id', 'headers', 'authorization'] as const;

/**
 * Whether a request body names an `mcp` tool (a scan of `tools`, nothing else): the route's
 * test for running the tool loop.
 */
export function hasMcpTool(body: unknown): boolean {
  const tools = body && typeof body === 'object' ? (body as { tools?: unknown }).tools : undefined;
  return Array.isArray(tools) && tools.some((t) => t !== null && typeof t === 'object' && (t as { type?: unknown }).type === 'mcp');
}

/**
 * The `mcp` tools of a request, checked against the configured servers.
 * @throws GatewayError (400, `param` = the field, e.g. `tools[1].require_approval`):
 * `unsupported_parameter` for `require_approval` other than `"never"` (OpenAI's default is
 * `"always"`; the gateway runs tools without approval only), for `server_url`, `connector_id`,
 * `tunnel_id`, `headers`, `authorization` (servers and their credentials come from the config
 * only) and for `defer_loading`; `invalid_request` for a missing or unconfigured `server_label`,
 * one named twice, or a malformed `allowed_tools`.
 */
export function mcpToolsOf(tools: readonly unknown[], servers: readonly string[]): McpToolRequest[] {
  const out: McpToolRequest[] = [];
  tools.forEach((raw, index) => {
    if (!raw || typeof raw !== 'object' || (raw as { type?: unknown }).type !== 'mcp') return;
    const t = raw as Record<string, unknown>;
    const at = (field: string) => `tools[${index}].${field}`;
    for (const field of FOREIGN_FIELDS) {
      if (t[field] !== undefined && t[field] !== null) {
        throw new GatewayError('unsupported_parameter', `${at(field)}: the gateway connects only to the MCP servers of its configuration (mcp_servers), named by server_label, with the credentials the configuration holds; a request names no server URL, connector or credentials`, { param: at(field) });
      }
    }
    if (t.defer_loading === true) throw new GatewayError('unsupported_parameter', `${at('defer_loading')}: deferred MCP tools are not supported; list the tools you need with allowed_tools`, { param: at('defer_loading') });
    const label = t.server_label;
    if (typeof label !== 'string' || label === '') throw new GatewayError('invalid_request', `${at('server_label')}: is required (the id of a configured MCP server)`, { param: at('server_label') });
    if (!servers.includes(label)) {
      throw new GatewayError('invalid_request', `${at('server_label')}: no MCP server "${label.slice(0, 100)}" is configured (servers: ${servers.join(', ') || 'none'})`, { param: at('server_label') });
    }
    if (out.some((o) => o.serverLabel === label)) throw new GatewayError('invalid_request', `${at('server_label')}: MCP server "${label}" is named twice in tools`, { param: at('server_label') });
    if (t.require_approval !== 'never') {
      const sent = t.require_approval === undefined ? 'none (OpenAI\'s default is "always")' : JSON.stringify(t.require_approval).slice(0, 100);
      throw new GatewayError('unsupported_parameter', `${at('require_approval')}: the gateway runs MCP tools without approval requests only; send "never" (sent: ${sent})`, { param: at('require_approval') });
    }
    const { allowed, readOnly } = allowedToolsOf(t.allowed_tools, at('allowed_tools'));
    out.push({ index, serverLabel: label, allowedTools: allowed, readOnly, description: typeof t.server_description === 'string' ? t.server_description : undefined });
  });
  return out;
}

/** `allowed_tools`: a list of names, or `{tool_names?, read_only?}`, or null. */
function allowedToolsOf(raw: unknown, param: string): { allowed: ReadonlySet<string> | null; readOnly: boolean } {
  if (raw === undefined || raw === null) return { allowed: null, readOnly: false };
  const names = (v: unknown, p: string): ReadonlySet<string> => {
    if (!Array.isArray(v) || !v.every((n) => typeof n === 'string')) throw new GatewayError('invalid_request', `${p}: must be a list of tool names`, { param: p });
    return new Set(v as string[]);
  };
  if (Array.isArray(raw)) return { allowed: names(raw, param), readOnly: false };
  if (typeof raw === 'object') {
    const f = raw as { tool_names?: unknown; read_only?: unknown };
    if (f.read_only !== undefined && typeof f.read_only !== 'boolean') throw new GatewayError('invalid_request', `${param}.read_only: must be a boolean`, { param: `${param}.read_only` });
    return { allowed: f.tool_names === undefined ? null : names(f.tool_names, `${param}.tool_names`), readOnly: f.read_only === true };
  }
  throw new GatewayError('invalid_request', `${param}: must be a list of tool names or {"tool_names": […], "read_only": …}`, { param });
}

/** Whether a listed tool of `req`'s server is one the request allows. */
export function requestAllows(req: McpToolRequest, tool: ListedTool): boolean {
  if (req.allowedTools !== null && !req.allowedTools.has(tool.name)) return false;
  return !req.readOnly || tool.annotations?.readOnlyHint === true;
}

/** The `mcp_list_tools` output item of one server's tools. */
export function listToolsItem(id: string, serverLabel: string, tools: readonly ListedTool[]): Record<string, unknown> {
  return {
    id,
    type: 'mcp_list_tools',
    server_label: serverLabel,
    tools: tools.map((t) => ({ name: t.name, description: t.description ?? null, input_schema: t.inputSchema, annotations: t.annotations ?? null })),
    error: null,
  };
}

/**
 * The function tool the model is offered for a server's tool: named `<server>__<tool>` (the
 * gateway's `/mcp` names, which model tool-name rules accept), its input schema as parameters.
 */
export function functionToolFor(serverLabel: string, tool: ListedTool, serverDescription: string | undefined): Record<string, unknown> {
  const description = [tool.description, serverDescription === undefined ? undefined : `(MCP server ${serverLabel}: ${serverDescription})`].filter(Boolean).join(' ');
  return { type: 'function', name: `${serverLabel}__${tool.name}`, description: description || null, parameters: tool.inputSchema, strict: false };
}

/** An `mcp_call` error (OpenAI's `MCPToolCallError`): a JSON-RPC error, or a tool's own error result. */
export type McpCallError = { type: 'mcp_protocol_error'; code: number; message: string } | { type: 'mcp_tool_execution_error'; content: unknown };

/** The `mcp_call` output item. */
export function mcpCallItem(
  id: string,
  call: { serverLabel: string; name: string; arguments: string },
  outcome: { status: 'in_progress' | 'completed' | 'failed' | 'incomplete'; output: string | null; error: McpCallError | null },
): Record<string, unknown> {
  return { id, type: 'mcp_call', server_label: call.serverLabel, name: call.name, arguments: call.arguments, output: outcome.output, error: outcome.error, status: outcome.status, approval_request_id: null };
}

/** A tool result as the text the model reads and `mcp_call.output` carries: its text parts joined, else its structured content as JSON. */
export function resultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const parts = Array.isArray(result.content) ? (result.content as { type?: string; text?: string }[]) : [];
  const text = parts.filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('\n');
  if (text !== '' || result.structuredContent === undefined) return text;
  return JSON.stringify(result.structuredContent);
}

/**
 * The body of one model turn: the request with its `mcp` tools replaced by `functions`, its
 * input followed by the turn items so far (the model's calls and their outputs), not streamed;
 * `answer` (the last turn) sets `tool_choice: "none"`.
 */
export function turnBody(body: Record<string, unknown>, functions: readonly Record<string, unknown>[], items: readonly unknown[], answer: boolean): Record<string, unknown> {
  const tools = [...(body.tools as unknown[]).filter((t) => (t as { type?: unknown }).type !== 'mcp'), ...functions];
  const input = typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : Array.isArray(body.input) ? body.input : [];
  return { ...body, tools, input: [...input, ...items], stream: false, ...(answer ? { tool_choice: 'none' } : {}) };
}
