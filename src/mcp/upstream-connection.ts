import { AsyncLocalStorage } from 'node:async_hooks';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolResultSchema,
  ErrorCode,
  GetPromptResultSchema,
  ListPromptsResultSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesResultSchema,
  ListToolsResultSchema,
  McpError,
  PromptListChangedNotificationSchema,
  type Progress,
  ReadResourceResultSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolRequest,
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type ServerCapabilities,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpServerConfig } from '../config/schema.js';
import { GatewayError } from '../errors/gateway-error.js';
import { bareMessage, McpWireError } from './mcp-errors.js';

/** Which list of an upstream changed (its `notifications/*\/list_changed`). */
export type ListKind = 'tools' | 'resources' | 'prompts';

/** What a connection tells its owner. */
export interface UpstreamConnectionHooks {
  /** The upstream sent `notifications/{kind}/list_changed`. */
  onListChanged(kind: ListKind): void;
  /** Warnings (a failed close, a stdio child's stderr line); never carries a secret. */
  warn(message: string): void;
}

/** What a client's request passes on to the upstream request it causes. */
export interface UpstreamRequestExtra {
  /** The client's request was cancelled: cancel the upstream one (`notifications/cancelled`). */
  signal?: AbortSignal;
  /** Relay the upstream's `notifications/progress` (the SDK gives the upstream its own token). */
  onprogress?: (progress: Progress) => void;
}

/** The gateway's name and version as upstream servers see it in `initialize`. */
export const GATEWAY_CLIENT_INFO = { name: 'opinference-mcp-gateway', version: '1.0.0' } as const;

/** Most pages of one list followed through `nextCursor` before the gateway stops (a looping cursor). */
const MAX_LIST_PAGES = 100;

/** Per-request state the fetch wrapper reads (the call's abort, whether its answer overflowed). */
interface CallScope {
  abort: AbortController;
  oversized: boolean;
}
const callScope = new AsyncLocalStorage<CallScope>();

/**
 * Values of the server's configuration that must never reach a client or a log: its header
 * values (and each word of one, such as the token of `Bearer <token>`) and its stdio
 * environment values; short ones (under 6 characters) are skipped, they would blank words.
 */
function secretsOf(server: McpServerConfig): string[] {
  const values = server.transport === 'stdio' ? Object.values(server.env) : [...Object.values(server.headers), ...(server.oauth ? [server.oauth.client_secret] : [])];
  const out = new Set<string>();
  for (const v of values) {
    if (v.length >= 6) out.add(v);
    for (const word of v.split(/\s+/)) if (word.length >= 6) out.add(word);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every configured secret of the server replaced by `[redacted]`. */
export function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join('[redacted]');
  return out;
}

/**
 * A fetch for the HTTP transports that stops reading a POST's answer past `maxBytes` (the
 * server's `max_result_bytes`): the body is cancelled (the upstream's connection with it) and
 * the request it answers is aborted as too large. The long-lived GET streams are not counted.
 */
function cappedFetch(maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const scope = callScope.getStore();
    if ((init?.method ?? 'GET').toUpperCase() !== 'POST' || response.body === null || scope === undefined) return response;
    let seen = 0;
    const counter = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) {
          scope.oversized = true;
          const err = new McpError(ErrorCode.InternalError, `the answer passed max_result_bytes (${maxBytes})`);
          controller.error(err);
          scope.abort.abort(err);
          return;
        }
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(counter), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** Whether an error says the upstream forgot the session (HTTP 404 on a request that carried its id). */
function isSessionGone(err: unknown): boolean {
  if (err instanceof StreamableHTTPError) return err.code === 404;
  return err instanceof Error && /\b404\b/.test(err.message) && /session/i.test(err.message);
}

/**
 * One connection of the gateway to one upstream MCP server (`mcp_servers[]`), through the
 * official SDK's `Client` and the transport the config names: opened lazily (the first request
 * connects and initialises), re-opened when it died (a stdio child exited, the transport
 * closed) or when the upstream forgot its session (HTTP 404: re-initialised and the request
 * sent once more), and bounded per request by `timeout_ms` and `max_result_bytes`.
 * Every failure becomes a `GatewayError` (`mcp_upstream_timeout`, `mcp_result_too_large`,
 * `mcp_upstream_unavailable`) whose message has the server's configured secrets removed; an
 * error the upstream answered (a JSON-RPC error) is passed on as an `McpError` with its code,
 * also scrubbed. The client's gateway key is never sent: the transports carry only the
 * configured headers.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle
 */
export class UpstreamConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private closed = false;
  private readonly configSecrets: string[];
  private oauthClient: ClientCredentialsProvider | undefined;
  /** Times a connection was opened (initialize sent), for tests and health. */
  connects = 0;

  constructor(readonly server: McpServerConfig, private readonly hooks: UpstreamConnectionHooks) {
    this.configSecrets = secretsOf(server);
  }

  /** The upstream's capabilities from its `initialize` answer (undefined before the first connect). */
  get capabilities(): ServerCapabilities | undefined {
    return this.client?.getServerCapabilities();
  }

  /** The transport the config names; stdio children get the SDK's safe environment plus `env`, never the gateway's. */
  private transport(): Transport {
    const s = this.server;
    if (s.transport === 'stdio') {
      const t = new StdioClientTransport({ command: s.command, args: s.args, env: { ...getDefaultEnvironment(), ...s.env }, stderr: 'pipe', ...(s.cwd === undefined ? {} : { cwd: s.cwd }) });
      t.stderr?.on('data', (chunk: Buffer) => this.hooks.warn(`MCP server "${s.id}" (stdio) stderr: ${scrub(chunk.toString('utf8').trimEnd().slice(0, 2000), this.secrets)}`));
      return t;
    }
    const requestInit = { headers: { ...s.headers } };
    const capped = cappedFetch(s.max_result_bytes);
    const authProvider = this.oauth();
    if (s.transport === 'sse') return new SSEClientTransport(new URL(s.url), { requestInit, fetch: capped, authProvider });
    return new StreamableHTTPClientTransport(new URL(s.url), { requestInit, fetch: capped, authProvider });
  }

  /**
   * The server's OAuth client (`oauth`: client credentials), one per connection object so the
   * access token outlives a re-opened transport; undefined without `oauth`.
   */
  private oauth(): ClientCredentialsProvider | undefined {
    const o = this.server.transport === 'stdio' ? undefined : this.server.oauth;
    if (!o) return undefined;
    this.oauthClient ??= new ClientCredentialsProvider({ clientId: o.client_id, clientSecret: o.client_secret, expectedIssuer: o.issuer, clientName: 'opinference', ...(o.scope === undefined ? {} : { scope: o.scope }) });
    return this.oauthClient;
  }

  /** The configured secrets and the current OAuth access token: what {@link scrub} blanks. */
  private get secrets(): readonly string[] {
    const token = this.oauthClient?.tokens()?.access_token;
    return token && token.length >= 6 ? [token, ...this.configSecrets] : this.configSecrets;
  }

  /** The live client, connecting (initialize) when there is none. */
  private connect(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.connecting) return this.connecting;
    const attempt = (async () => {
      const client = new Client(GATEWAY_CLIENT_INFO, { capabilities: {} });
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.hooks.onListChanged('tools'));
      client.setNotificationHandler(ResourceListChangedNotificationSchema, () => this.hooks.onListChanged('resources'));
      client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.hooks.onListChanged('prompts'));
      client.onclose = () => {
        if (this.client === client) this.client = undefined;
      };
      // Transport errors (a dropped GET stream, a parse error) are the SDK's to retry; the request that failed reports its own.
      client.onerror = () => {};
      this.connects++;
      try {
        await client.connect(this.transport(), { timeout: this.server.timeout_ms });
      } catch (err) {
        void client.close().catch(() => {});
        throw err;
      }
      if (this.closed) {
        void client.close().catch(() => {});
        throw new GatewayError('mcp_upstream_unavailable', `MCP server "${this.server.id}": the gateway is closing`);
      }
      this.client = client;
      return client;
    })();
    this.connecting = attempt;
    attempt.then(() => { this.connecting = undefined; }, () => { this.connecting = undefined; });
    return attempt;
  }

  /**
   * Run one request on the upstream with the server's bounds; a forgotten session is
   * re-initialised and the request sent once more (nothing reached the upstream's tool).
   * @throws GatewayError `mcp_upstream_timeout`, `mcp_result_too_large`, `mcp_upstream_unavailable`;
   * McpWireError for a JSON-RPC error the upstream answered (its code, message scrubbed).
   */
  async run<T>(what: string, send: (client: Client, options: RequestOptions) => Promise<T>, extra: UpstreamRequestExtra = {}): Promise<T> {
    if (this.closed) throw new GatewayError('mcp_upstream_unavailable', `MCP server "${this.server.id}": the gateway is closing`);
    for (let attempt = 0; ; attempt++) {
      const scope: CallScope = { abort: new AbortController(), oversized: false };
      // The client cancelled (notifications/cancelled): the upstream request is cancelled too.
      const cancelled = () => scope.abort.abort(new McpError(ErrorCode.RequestTimeout, 'cancelled by the client'));
      if (extra.signal?.aborted) cancelled();
      extra.signal?.addEventListener('abort', cancelled, { once: true });
      let client: Client | undefined;
      try {
        return await callScope.run(scope, async () => {
          client = await this.connect();
          const options: RequestOptions = { timeout: this.server.timeout_ms, signal: scope.abort.signal, ...(extra.onprogress === undefined ? {} : { onprogress: extra.onprogress, resetTimeoutOnProgress: false }) };
          const result = await send(client, options);
          // Transports not counted while reading (stdio, the legacy SSE stream): checked once whole, never relayed when over.
          if (this.server.transport !== 'streamable_http' && Buffer.byteLength(JSON.stringify(result)) > this.server.max_result_bytes) {
            scope.oversized = true;
            throw new GatewayError('mcp_result_too_large', 'over max_result_bytes');
          }
          return result;
        });
      } catch (err) {
        if (!scope.oversized && attempt === 0 && isSessionGone(err)) {
          // The upstream forgot our session (restarted, expired it): a new one, and the request again.
          if (client && this.client === client) this.client = undefined;
          void client?.close().catch(() => {});
          continue;
        }
        if (extra.signal?.aborted) throw new GatewayError('client_closed_request', `the client cancelled ${what} (the upstream request was cancelled too)`);
        throw this.failure(what, err, scope);
      } finally {
        extra.signal?.removeEventListener('abort', cancelled);
      }
    }
  }

  /** The error the gateway answers for a failed upstream request (see {@link run}). */
  private failure(what: string, err: unknown, scope: CallScope): Error {
    const id = this.server.id;
    if (scope.oversized) return new GatewayError('mcp_result_too_large', `MCP server "${id}": the answer to ${what} is larger than its max_result_bytes (${this.server.max_result_bytes} bytes); it was not relayed`);
    if (err instanceof GatewayError) return err;
    if (err instanceof McpError) {
      if (err.code === ErrorCode.RequestTimeout) return new GatewayError('mcp_upstream_timeout', `MCP server "${id}" did not answer ${what} within its timeout_ms (${this.server.timeout_ms} ms)`);
      if (err.code === ErrorCode.ConnectionClosed) {
        this.client = undefined;
        return new GatewayError('mcp_upstream_unavailable', `MCP server "${id}" closed the connection during ${what} (${this.server.transport === 'stdio' ? 'its process exited' : 'the transport closed'}); the next request opens a new one`);
      }
      // The upstream's own JSON-RPC error: passed on with its code, scrubbed.
      return new McpWireError(err.code, scrub(bareMessage(err), this.secrets), err.data);
    }
    const message = err instanceof Error ? err.message : String(err);
    return new GatewayError('mcp_upstream_unavailable', `MCP server "${id}" failed ${what}: ${scrub(message, this.secrets).slice(0, 500)}`, { cause: err });
  }

  /** Every tool of the upstream (all pages); [] when it offers no tools capability. */
  async listTools(): Promise<Tool[]> {
    return this.allPages('tools/list', 'tools', (c, cursor, o) => c.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, ListToolsResultSchema, o).then((r) => ({ items: r.tools, next: r.nextCursor })));
  }

  /** Every resource of the upstream (all pages). */
  async listResources(): Promise<Resource[]> {
    return this.allPages('resources/list', 'resources', (c, cursor, o) => c.request({ method: 'resources/list', params: cursor === undefined ? {} : { cursor } }, ListResourcesResultSchema, o).then((r) => ({ items: r.resources, next: r.nextCursor })));
  }

  /** Every resource template of the upstream (all pages). */
  async listResourceTemplates(): Promise<ResourceTemplate[]> {
    return this.allPages('resources/templates/list', 'resources', (c, cursor, o) => c.request({ method: 'resources/templates/list', params: cursor === undefined ? {} : { cursor } }, ListResourceTemplatesResultSchema, o).then((r) => ({ items: r.resourceTemplates, next: r.nextCursor })));
  }

  /** Every prompt of the upstream (all pages). */
  async listPrompts(): Promise<Prompt[]> {
    return this.allPages('prompts/list', 'prompts', (c, cursor, o) => c.request({ method: 'prompts/list', params: cursor === undefined ? {} : { cursor } }, ListPromptsResultSchema, o).then((r) => ({ items: r.prompts, next: r.nextCursor })));
  }

  /**
   * `tools/call` with the upstream's own tool name; the result is relayed as the upstream gave it
   * (no output-schema check), except that an `isError` result's text has the server's secrets removed.
   */
  async callTool(params: CallToolRequest['params'], extra: UpstreamRequestExtra = {}): Promise<CallToolResult> {
    const result = (await this.run(`tools/call "${params.name}"`, (c, o) => c.request({ method: 'tools/call', params }, CallToolResultSchema, o), extra)) as CallToolResult;
    if (result.isError !== true || this.secrets.length === 0) return result;
    // A tool's error text is the upstream's error text too: the server's secrets are removed.
    return { ...result, content: result.content.map((b) => (b.type === 'text' ? { ...b, text: scrub(b.text, this.secrets) } : b)) };
  }

  /** `resources/read` of one URI. */
  readResource(uri: string): Promise<ReadResourceResult> {
    return this.run('resources/read', (c, o) => c.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema, o));
  }

  /** `prompts/get` with the upstream's own prompt name. */
  getPrompt(name: string, args: Record<string, string> | undefined): Promise<GetPromptResult> {
    return this.run(`prompts/get "${name}"`, (c, o) => c.request({ method: 'prompts/get', params: { name, ...(args === undefined ? {} : { arguments: args }) } }, GetPromptResultSchema, o));
  }

  /** Follow `nextCursor` to the end (at most {@link MAX_LIST_PAGES} pages); [] when the upstream lacks the capability. */
  private async allPages<T>(what: string, capability: 'tools' | 'resources' | 'prompts', page: (c: Client, cursor: string | undefined, o: RequestOptions) => Promise<{ items: T[]; next: string | undefined }>): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < MAX_LIST_PAGES; i++) {
      const got = await this.run(what, async (c, o) => {
        if (c.getServerCapabilities()?.[capability] === undefined) return { items: [] as T[], next: undefined };
        return page(c, cursor, o);
      });
      out.push(...got.items);
      if (got.next === undefined || got.next === cursor) break;
      cursor = got.next;
    }
    return out;
  }

  /** Close the connection (ends the upstream session: DELETE for Streamable HTTP, the child for stdio); later requests fail. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? (await this.connecting?.catch(() => undefined));
    this.client = undefined;
    if (!client) return;
    const transport = client.transport;
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {});
    await client.close().catch((err: unknown) => this.hooks.warn(`MCP server "${this.server.id}": close failed: ${scrub(String(err), this.secrets)}`));
  }
}
