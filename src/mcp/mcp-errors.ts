import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorCode as CatalogCode } from '../errors/catalog.js';
import { GatewayError } from '../errors/gateway-error.js';

/**
 * How the gateway's catalog errors travel over MCP: as JSON-RPC errors whose `data` carries the
 * catalog `code` (and `param` when there is one), so a client can tell a refused tool from an
 * upstream that timed out.
 * @see https://modelcontextprotocol.io/specification/2025-11-25/server/tools#error-handling
 */

/** JSON-RPC code of `mcp_rate_limited` (docs/mcp.md): a server error of the implementation-defined range. */
export const MCP_RATE_LIMITED_CODE = -32029;

/** JSON-RPC code of each catalog error sent over MCP; anything else is -32603 (internal). */
const JSON_RPC_CODES: Partial<Record<CatalogCode, number>> = {
  mcp_tool_not_allowed: ErrorCode.InvalidParams,
  mcp_unknown_tool: ErrorCode.InvalidParams,
  mcp_upstream_timeout: ErrorCode.RequestTimeout,
  mcp_result_too_large: ErrorCode.InternalError,
  mcp_upstream_unavailable: ErrorCode.InternalError,
  mcp_session_not_found: -32001,
  // Implementation-defined server error (-32000…-32099): 429 in its last digits.
  mcp_rate_limited: MCP_RATE_LIMITED_CODE,
  mcp_origin_not_allowed: ErrorCode.ConnectionClosed,
  invalid_json: ErrorCode.ParseError,
  invalid_request: ErrorCode.InvalidRequest,
  unsupported_media_type: ErrorCode.InvalidRequest,
  body_too_large: ErrorCode.InvalidRequest,
  // Auth: the SDK's transport errors use -32000 (HTTP 401 carries the meaning).
  missing_api_key: ErrorCode.ConnectionClosed,
  invalid_api_key: ErrorCode.ConnectionClosed,
  key_expired: ErrorCode.ConnectionClosed,
};

/** `{ code, param?, retry_after_ms? }`: what `data` of a JSON-RPC error from the gateway holds. */
export interface McpErrorData {
  code: CatalogCode;
  param?: string;
  /** `mcp_rate_limited`: ms until the key's window resets. */
  retry_after_ms?: number;
}

/**
 * A JSON-RPC error as a request handler throws it for the SDK to send (`code`, `message`,
 * `data`). Unlike the SDK's `McpError`, whose message carries an `MCP error <code>: ` prefix
 * that the client adds once more, the message goes out as written.
 */
export class McpWireError extends Error {
  constructor(readonly code: number, message: string, readonly data?: unknown) {
    super(message);
    this.name = 'McpWireError';
  }
}

/** An SDK McpError's message without the `MCP error <code>: ` prefix(es) the SDK put in front. */
export function bareMessage(err: McpError): string {
  return err.message.replace(/^(MCP error -?\d+: )+/, '');
}

/**
 * The error a handler throws for any failure: a GatewayError as its JSON-RPC code with the
 * catalog code in `data`; an upstream's own JSON-RPC error (McpError) with its code and data;
 * anything else as -32603 with a generic message (details only in the log).
 */
export function toMcpError(err: unknown): McpWireError {
  if (err instanceof McpWireError) return err;
  if (err instanceof McpError) return new McpWireError(err.code, bareMessage(err), err.data);
  if (err instanceof GatewayError) {
    const retryAfter = err.metadata?.retry_after_ms;
    const data: McpErrorData = { code: err.code, ...(err.param === null ? {} : { param: err.param }), ...(typeof retryAfter === 'number' ? { retry_after_ms: retryAfter } : {}) };
    return new McpWireError(JSON_RPC_CODES[err.code] ?? ErrorCode.InternalError, err.message, data);
  }
  return new McpWireError(ErrorCode.InternalError, 'internal error in the MCP gateway', { code: 'internal_error' });
}

/**
 * The JSON-RPC error body of an HTTP error answered before (or instead of) the MCP transport:
 * `{"jsonrpc":"2.0","error":{code,message,data},"id":null}` (the shape the SDK's own transport
 * errors have).
 */
export function jsonRpcErrorBody(err: GatewayError, requestId?: string): { jsonrpc: '2.0'; error: { code: number; message: string; data: McpErrorData & { request_id?: string } }; id: null } {
  const e = toMcpError(err);
  const data = { ...(e.data as McpErrorData), ...(requestId === undefined ? {} : { request_id: requestId }) };
  return { jsonrpc: '2.0', error: { code: e.code, message: err.message, data }, id: null };
}

/** Whether a request path is one of the MCP endpoints (`/mcp`, `/mcp/…`), whose errors are JSON-RPC bodies. */
export function isMcpPath(path: string): boolean {
  return path === '/mcp' || path.startsWith('/mcp/');
}
