import { ERROR_CATALOG } from './catalog.js';

/**
 * Render the errors page (`docs/errors.md`) from the catalog. `npm run docs:errors` writes it;
 * a test compares the file with this output so the two never drift.
 */
export function renderErrorDocs(): string {
  const rows = Object.entries(ERROR_CATALOG).map(
    ([code, d]) => `| \`${code}\` | ${d.status} | ${d.kind} | ${d.scope} | \`${d.type}\` | ${d.description.replace(/\|/g, '\\|')} |`,
  );
  return [
    '# Errors',
    '',
    '<!-- Generated from src/errors/catalog.ts by `npm run docs:errors`. Do not edit by hand. -->',
    '',
    'Every failure is an HTTP error with this envelope (a stream that already started ends with one',
    'chunk carrying the same `error` object, `finish_reason: "error"`, then `data: [DONE]`):',
    '',
    '```json',
    '{"error": {"code": "no_endpoint_available", "message": "no endpoint serves model \\"no-such/model\\"",',
    '  "kind": "terminal", "scope": "model", "type": "invalid_request_error", "param": null,',
    '  "request_id": "req_…"}}',
    '```',
    '',
    '- `code` is the stable value to switch on.',
    '- `kind`: `retryable` means the same request may succeed if retried as is (honour `Retry-After`',
    '  when sent); `terminal` means it will fail again until something changes.',
    '- `scope`: what the failure concerns — `request`, `key`, `model`, `provider` or `gateway`.',
    '- `type`: the OpenAI error type, so OpenAI SDKs raise the matching error class.',
    '- `param`: the request field at fault, in dotted form (`messages[1].content`), or `null`.',
    '- `request_id`: also sent as the `x-request-id` header on every response; it finds the',
    '  request in the gateway logs.',
    '- `metadata` (optional): upstream details such as `provider_name` (the provider id from the config), `upstream_status`, `upstream_code`.',
    '',
    'An upstream\'s own error message is relayed as `message`, with credentials replaced by `[redacted]`: the',
    'provider\'s configured `api_key`, every key of its `api_keys` and its `headers` values, and any `Authorization`, `x-api-key`, `x-goog-api-key`',
    'value it quotes, a `key=` / `token=` query parameter (after `?`, `&` or `;` only) and well-known key shapes;',
    'the same goes for every other upstream string (`param`, `metadata.upstream_code`).',
    'Redaction runs before the message is cut to 2,000 characters. The same scrubbed text is what the generation record stores.',
    '',
    'A request whose head (request line and headers) is larger than Node\'s limit (16 KiB unless',
    '`node --max-http-header-size` sets another) gets HTTP 431, not 400, with code `invalid_request`: it is answered',
    'before any route or key check, and the connection is closed.',
    '',
    '| code | HTTP status | kind | scope | type | when |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
