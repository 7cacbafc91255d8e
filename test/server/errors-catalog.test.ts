import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CATALOG } from '../../src/errors/catalog.js';
import { renderErrorDocs } from '../../src/errors/render-docs.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

test('docs/errors.md is generated from the catalog (run `npm run docs:errors` when this fails)', () => {
  const onDisk = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  assert.equal(onDisk, renderErrorDocs());
  for (const code of Object.keys(ERROR_CATALOG)) assert.ok(onDisk.includes(`| \`${code}\` |`), code);
});

test('every catalog entry is coherent: retryable codes are 408/429/5xx, terminal ones are 4xx', () => {
  for (const [code, d] of Object.entries(ERROR_CATALOG)) {
    if (d.kind === 'retryable') assert.ok(d.status === 408 || d.status === 429 || d.status >= 500, code);
    // Terminal 5xx: the gateway's operator must fix something (config, credentials, a model file; an MCP server's max_result_bytes).
    else assert.ok((d.status >= 400 && d.status < 500) || ['no_providers_configured', 'upstream_auth_failed', 'provider_misconfigured', 'mcp_result_too_large'].includes(code), code);
  }
});

test('GatewayError renders the seed-003 envelope', () => {
  const err = new GatewayError('no_endpoint_available', 'no endpoint serves model "no-such/model"');
  assert.deepEqual(err.toBody('req_1'), {
    code: 'no_endpoint_available',
    message: 'no endpoint serves model "no-such/model"',
    kind: 'terminal',
    scope: 'model',
    type: 'invalid_request_error',
    param: null,
    request_id: 'req_1',
  });
  assert.equal(err.status, 404);
});
