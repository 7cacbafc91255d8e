/**
 * The one catalog of every error the gateway produces.
 *
 * Each entry fixes the stable `code` clients switch on, the HTTP status, whether retrying the
 * same request as-is can help (`kind`), what the failure concerns (`scope`) and the OpenAI
 * `type` that keeps OpenAI SDKs mapping it to the right error class. `docs/errors.md` is
 * generated from this table (`npm run docs:errors`) and a test fails when the two drift.
 *
 * @see ../../../shared/SPEC.md §2.3 (envelope) and seed 003 (gateway semantics)
 */

/** `terminal`: the same request will fail again; `retryable`: worth retrying as is. */
export type ErrorKind = 'terminal' | 'retryable';

/** What a failure concerns. */
export type ErrorScope = 'request' | 'key' | 'model' | 'provider' | 'gateway';

/** OpenAI error `type` values the official SDKs recognise. */
export type OpenAIErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'insufficient_quota'
  | 'server_error'
  | 'timeout_error';

/** One catalog entry. */
export interface ErrorDefinition {
  /** HTTP status sent with the error (before the first byte of a stream). */
  readonly status: number;
  readonly kind: ErrorKind;
  readonly scope: ErrorScope;
  readonly type: OpenAIErrorType;
  /** One sentence for the docs page: when this error happens and what to do. */
  readonly description: string;
}

const define = <T extends Record<string, ErrorDefinition>>(table: T): { readonly [K in keyof T]: ErrorDefinition } =>
  Object.freeze(table);

/** Every error code the gateway can emit, keyed by code. */
export const ERROR_CATALOG = define({
  invalid_request: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The request body is malformed or a field has a wrong type or value; `param` names the field.',
  },
  invalid_json: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The request body is not valid JSON, or passes a bound on its structure checked before parsing (`server.max_json_depth`, `server.max_json_values`, `server.max_json_containers`).',
  },
  unsupported_input_modality: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'A message part (image, audio, file) is of a kind the model does not take (its `architecture.input_modalities`), or an endpoint that takes string content only cannot carry it; `param` names the part, e.g. `messages[3].content[1]`. Nothing was sent upstream.',
  },
  unsupported_media_type: {
    status: 415, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The request body is not `application/json`, or is compressed (`Content-Encoding` other than `identity`: send it uncompressed).',
  },
  body_too_large: {
    status: 413, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The request body is larger than `server.body_limit_bytes` allows.',
  },
  request_timeout: {
    status: 408, kind: 'retryable', scope: 'request', type: 'invalid_request_error',
    description: 'The client was too slow: its request body went silent for longer than `server.body_idle_timeout_ms`, its head took longer than `server.headers_timeout_ms`, or the whole request longer than `server.request_timeout_ms`; the connection is closed.',
  },
  unsupported_parameter: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'A parameter has no meaning on this route (for example `suffix` sent to a chat-only endpoint); `param` names it.',
  },
  not_found: {
    status: 404, kind: 'terminal', scope: 'request', type: 'not_found_error',
    description: 'No such route, or no such object (model, generation).',
  },
  response_store_disabled: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'A Responses request asked to keep its response (`store: true`) or to continue one (`previous_response_id`) while its retention is `none`: the gateway keeps no text then. Send `op.retention` as a number of days (or give the key a retention), or send the whole conversation as `input` with `store: false`.',
  },
  method_not_allowed: {
    status: 405, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The route exists but not for this HTTP method.',
  },
  missing_api_key: {
    status: 401, kind: 'terminal', scope: 'key', type: 'authentication_error',
    description: 'No `Authorization: Bearer <key>` (or `x-api-key: <key>`) header was sent.',
  },
  invalid_api_key: {
    status: 401, kind: 'terminal', scope: 'key', type: 'authentication_error',
    description: 'The key is unknown, disabled or expired.',
  },
  key_expired: {
    status: 401, kind: 'terminal', scope: 'key', type: 'authentication_error',
    description: 'The key is past its `expires_at`.',
  },
  insufficient_credits: {
    status: 402, kind: 'terminal', scope: 'key', type: 'insufficient_quota',
    description: 'The key\'s credit limit cannot cover the worst case of this request (prompt plus output limit at the endpoint\'s prices); the message says how many output tokens it could afford. With a team or an end-user cap (`end_user_limits.usd_per_day`) in force, `metadata.level` says which budget refused: `key`, `team` or `end_user`. Lower `max_tokens` or raise the limit.',
  },
  rate_limited: {
    status: 429, kind: 'retryable', scope: 'key', type: 'rate_limit_error',
    description: 'The key, its team (over the sum of the team\'s keys) or the request\'s end user (`user`, `x-op-user`; the key\'s `end_user_limits`) exceeded a requests-per-minute or tokens-per-minute limit; `metadata.level` says which (`key`, `team`, `end_user`); `Retry-After` and `x-ratelimit-*` headers say when it resets.',
  },
  model_not_allowed: {
    status: 403, kind: 'terminal', scope: 'key', type: 'permission_error',
    description: 'The key may not use this model (its `allowed_models` list, or its team\'s); `metadata.level` says whose list refused (`key` or `team`).',
  },
  admin_key_required: {
    status: 403, kind: 'terminal', scope: 'key', type: 'permission_error',
    description: 'The route needs the admin key (`OP_ADMIN_KEY`).',
  },
  invalid_catalog_entry: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'A provider or model sent to the catalog API (`/v1/catalog/…`) does not validate as the config file would, merged with the file and the other stored entries; `metadata.issues` lists every problem as `path: message`, `param` the first one\'s path. Nothing was stored.',
  },
  catalog_entry_read_only: {
    status: 409, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The provider or model comes from the config file, whose entries the catalog API cannot change or remove: edit the file (and reload) instead.',
  },
  catalog_secret_key_missing: {
    status: 400, kind: 'terminal', scope: 'gateway', type: 'invalid_request_error',
    description: 'A provider sent to the catalog API carries a secret (`api_key`, `api_keys`, `headers`, Entra secrets), which is stored encrypted, and the gateway has no `OP_CATALOG_SECRET_KEY` (32 bytes, hex or base64; the same on every replica). Nothing was stored.',
  },
  catalog_conflict: {
    status: 409, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'Other catalog changes kept arriving while this one was validated against the latest catalog (five times in a row): read the catalog again (`GET /v1/catalog`) and send the change again if it still applies.',
  },
  session_invalid: {
    status: 401, kind: 'terminal', scope: 'key', type: 'authentication_error',
    description: 'The dashboard session cookie (`op_session`) is not valid: changed, signed with another secret (`dashboard.oidc.cookie_secret_env`) or expired; sign in again at `/auth/login`.',
  },
  csrf_token_invalid: {
    status: 403, kind: 'terminal', scope: 'request', type: 'permission_error',
    description: 'A state-changing request (POST, PATCH, PUT, DELETE) authenticated by the dashboard session cookie came without the session\'s CSRF token in `x-csrf-token` (it is `csrf_token` of `GET /auth/me`), or with another one.',
  },
  role_forbidden: {
    status: 403, kind: 'terminal', scope: 'key', type: 'permission_error',
    description: 'The signed-in user\'s roles (single sign-on, `dashboard.oidc.role_mapping`) do not allow this: a `viewer:<team>` reads only, a `team_admin:<team>` manages only its team\'s keys, and team roles reach only the dashboard\'s APIs (keys, usage, requests, models).',
  },
  sso_login_failed: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'A single sign-on login could not be completed: the identity provider answered with an error, the login took longer than 10 minutes, the `state` did not match the browser\'s login cookie, or the ID token did not validate; start again at `/auth/login`.',
  },
  sso_no_role: {
    status: 403, kind: 'terminal', scope: 'key', type: 'permission_error',
    description: 'The identity provider signed the user in, but no value of their roles claim (`dashboard.oidc.roles_claim`) is mapped to a role in `dashboard.oidc.role_mapping`: the gateway grants nothing.',
  },
  sso_provider_unavailable: {
    status: 502, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'The identity provider of single sign-on (`dashboard.oidc.issuer`) could not be reached, or its discovery document or token endpoint did not answer as an OpenID provider.',
  },
  no_providers_configured: {
    status: 503, kind: 'terminal', scope: 'gateway', type: 'invalid_request_error',
    description: 'The gateway has no providers or models configured; add them to the config file (see README, "Configuration").',
  },
  no_endpoint_available: {
    status: 404, kind: 'terminal', scope: 'model', type: 'invalid_request_error',
    description: 'No configured endpoint serves the requested model (or none is left after routing filters; `metadata.excluded` gives each endpoint\'s reason). On the Messages API, when the model exists and only what the request asked (output limit, tools, parameters, provider preferences) excluded its endpoints, the status is 400 (`invalid_request_error`) instead.',
  },
  endpoints_unavailable: {
    status: 503, kind: 'retryable', scope: 'model', type: 'server_error',
    description: 'Every endpoint that could serve the request is temporarily out (circuit open after repeated failures, or a rate-limit cooldown); `Retry-After` says when to retry.',
  },
  attempts_exhausted: {
    status: 502, kind: 'retryable', scope: 'model', type: 'server_error',
    description: 'The request reached `routing.max_attempts` or `routing.request_deadline_ms` before an endpoint answered; the last upstream error is in `metadata`.',
  },
  context_length_exceeded: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The prompt plus the output limit does not fit the model\'s context window; the upstream message is kept.',
  },
  reasoning_exhausted_output_limit: {
    status: 422, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The model spent the whole output limit on reasoning and produced no answer; raise `max_completion_tokens` or lower the reasoning effort.',
  },
  upstream_bad_request: {
    status: 400, kind: 'terminal', scope: 'provider', type: 'invalid_request_error',
    description: 'The upstream refused the request as invalid (its own 4xx); the upstream message and status are passed on.',
  },
  content_filtered: {
    status: 400, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The upstream\'s content filter blocked the prompt (Azure OpenAI\'s 400 `code: content_filter`); `param` is the upstream\'s (`prompt`) or `messages`, and `metadata.provider_metadata.content_filter_result` holds the filter\'s verdict per category (also kept in the record). Not retried: another endpoint of the model would block it too. A filtered answer is not this error: it finishes with `finish_reason: "content_filter"`.',
  },
  upstream_auth_failed: {
    status: 502, kind: 'terminal', scope: 'provider', type: 'server_error',
    description: 'The upstream rejected the gateway\'s provider credentials (401/403), or a cloud provider\'s token could not be obtained (the message names the credential source): fix `api_key`, or the cloud credentials, of that provider. Other endpoints of the model are still tried. With several keys (`api_keys`), only the key that got it cools (60 s; the record names its label) and the endpoint is tried at once with another of its keys.',
  },
  provider_misconfigured: {
    status: 502, kind: 'terminal', scope: 'provider', type: 'server_error',
    description: 'The provider cannot serve until an operator fixes its configuration: a `local` endpoint\'s model file does not exist or cannot be loaded (`/ready` and `opinference config check` name the file). Other endpoints of the model are still tried.',
  },
  upstream_rate_limited: {
    status: 429, kind: 'retryable', scope: 'provider', type: 'rate_limit_error',
    description: 'The upstream rate-limited the request (429); `Retry-After` is passed on when the upstream sent it. With several keys (`api_keys`), only the key that got it cools and the endpoint is tried at once with another of its keys.',
  },
  upstream_overloaded: {
    status: 503, kind: 'retryable', scope: 'provider', type: 'server_error',
    description: 'The upstream said it is overloaded (503 or 529).',
  },
  upstream_timeout: {
    status: 504, kind: 'retryable', scope: 'provider', type: 'timeout_error',
    description: 'The upstream did not connect, send its first token, keep sending, or finish within the configured timeouts.',
  },
  upstream_connection_failed: {
    status: 502, kind: 'retryable', scope: 'provider', type: 'server_error',
    description: 'The upstream could not be reached or closed the connection.',
  },
  upstream_error: {
    status: 502, kind: 'retryable', scope: 'provider', type: 'server_error',
    description: 'The upstream failed (5xx) or reported an error inside its response.',
  },
  upstream_invalid_response: {
    status: 502, kind: 'retryable', scope: 'provider', type: 'server_error',
    description: 'The upstream answered with something that is not a valid response for its protocol.',
  },
  client_closed_request: {
    status: 499, kind: 'terminal', scope: 'request', type: 'invalid_request_error',
    description: 'The client disconnected before the response was complete; recorded as a cancelled generation.',
  },
  limits_unavailable: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'The shared limit store (Redis, `OP_REDIS_URL`) cannot be reached, so a key with limits cannot be checked; keys without limits keep working.',
  },
  response_cache_unavailable: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: '`DELETE /v1/responses/{id}` could not delete the response\'s response-cache entry (Redis, `OP_REDIS_URL`, cannot be reached), so nothing was deleted; retry once Redis answers.',
  },
  records_unavailable: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'The database cannot be written and `records.max_queued` generation records already wait in memory: rather than answer without a record, the gateway takes no new generation requests until the database is back; `Retry-After` says when to retry (another replica may take it).',
  },
  database_unavailable: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'The database cannot be reached, and what the request needs was not known without it (a key not seen in the last minutes, a stored response, the usage or key API); `Retry-After` says when to retry. Keys seen lately keep working from their last known state (docs/database.md).',
  },
  connection_pool_exhausted: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'Every local connection slot to the provider (`max_connections`) stayed busy for `timeouts.pool_wait_ms`; the gateway tries the next endpoint first. Not counted against the provider\'s health. Raise `max_connections` if it happens under normal load.',
  },
  mcp_tool_not_allowed: {
    status: 403, kind: 'terminal', scope: 'key', type: 'permission_error',
    description: 'An MCP `tools/call` (or `prompts/get`, `resources/read`) named a tool the key may not use (its `allowed_tools`) or that the server\'s `allowed_tools`/`denied_tools` hide; sent as a JSON-RPC error `-32602` (the code of an unknown tool), with this code in `data.code`. Nothing was sent upstream.',
  },
  mcp_unknown_tool: {
    status: 404, kind: 'terminal', scope: 'request', type: 'not_found_error',
    description: 'An MCP request named a tool, prompt or resource that no configured MCP server (`mcp_servers`) offers, or a server id that is not configured; sent as a JSON-RPC error `-32602`.',
  },
  mcp_upstream_timeout: {
    status: 504, kind: 'retryable', scope: 'provider', type: 'timeout_error',
    description: 'An upstream MCP server did not answer within its `timeout_ms`; the gateway cancelled the request upstream (`notifications/cancelled`) and answers a JSON-RPC error `-32001` (request timeout).',
  },
  mcp_result_too_large: {
    status: 502, kind: 'terminal', scope: 'provider', type: 'server_error',
    description: 'An upstream MCP server\'s answer passed its `max_result_bytes`; the gateway stopped reading it and answers a JSON-RPC error `-32603` instead of relaying it.',
  },
  mcp_upstream_unavailable: {
    status: 502, kind: 'retryable', scope: 'provider', type: 'server_error',
    description: 'An upstream MCP server could not be reached, refused the gateway (its credentials in `mcp_servers[].headers`), or its stdio process exited; the gateway reconnects (a new session, a new process) on the next request. The message is the upstream\'s, with the server\'s configured header and environment values removed.',
  },
  mcp_rate_limited: {
    status: 429, kind: 'retryable', scope: 'key', type: 'rate_limit_error',
    description: 'An MCP `tools/call` (through `/mcp`, `/mcp/{server}` or the Responses `mcp` tool) passed the key\'s `mcp_calls_per_minute`; sent as a JSON-RPC error `-32029` with this code and `retry_after_ms` in `data`, recorded as a refused call. Nothing was sent upstream; the window resets within a minute.',
  },
  mcp_origin_not_allowed: {
    status: 403, kind: 'terminal', scope: 'request', type: 'permission_error',
    description: 'A request to `/mcp` carried an `Origin` (a browser page) that is neither the gateway\'s own nor listed in `server.cors.allowed_origins`: refused as the MCP transport requires, against DNS-rebinding pages; clients that are not browsers send no `Origin`.',
  },
  mcp_session_not_found: {
    status: 404, kind: 'terminal', scope: 'request', type: 'not_found_error',
    description: 'The `Mcp-Session-Id` names no MCP session of this gateway process (ended, expired, opened with another key, or opened on another replica: see docs/mcp.md on sticky sessions); the client starts a new one with `initialize`.',
  },
  gateway_overloaded: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'This gateway process is saturated (`server.overload`: event-loop delay or utilization, generation requests or streams at once) and refuses new generation work before reading the body, so that the streams it holds and its health check stay fast; nothing is recorded. `Retry-After` says when to retry (another replica may take it); `/ready` answers 503 `overloaded` meanwhile.',
  },
  gateway_shutting_down: {
    status: 503, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'The gateway is draining for shutdown and accepts no new requests; retry on another replica.',
  },
  internal_error: {
    status: 500, kind: 'retryable', scope: 'gateway', type: 'server_error',
    description: 'A bug in the gateway. The message is generic; the `request_id` finds the details in the logs.',
  },
});

/** Every code in the catalog. */
export type ErrorCode = keyof typeof ERROR_CATALOG;
