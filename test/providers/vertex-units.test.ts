/**
 * Provider kind `vertex`, its pure parts: hosts per location, model URLs, the Claude body edits,
 * both error envelopes through the catalog, embeddings parsing and usage, the config's checks
 * (defaults, a missing `vertex`, bad values) and the token failure message.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { toVertexAnthropicBody, vertexHost, vertexModelUrl, withRoles, type VertexSettings } from '../../src/providers/vertex/convert-to-vertex-request.js';
import { convertVertexEmbeddingResponse } from '../../src/providers/vertex/convert-vertex-embedding-response.js';
import { convertVertexEmbeddingUsage } from '../../src/providers/vertex/convert-vertex-usage.js';
import { tokenError } from '../../src/providers/vertex/vertex-credentials.js';
import { isAnthropicErrorBody, parseVertexErrorResponse } from '../../src/providers/vertex/vertex-error.js';
import type { ProviderTarget } from '../../src/providers/types.js';
import type { GeminiRequest } from '../../src/providers/gemini/gemini-wire-types.js';

const SETTINGS: VertexSettings = { project: 'proj-1', location: 'global', publisher: 'google', api_version: 'v1' };
const target = (endpoint: Record<string, unknown> = {}, provider: Record<string, unknown> = {}) =>
  ({ endpoint: { upstream_model: 'gemini-2.5-flash', ...endpoint }, provider: { headers: {}, ...provider } }) as unknown as ProviderTarget;

describe('vertex URLs', () => {
  test('hosts: global, the us/eu multi-regions, a region; base_url replaces the host', () => {
    assert.equal(vertexHost('global'), 'https://aiplatform.googleapis.com');
    assert.equal(vertexHost('us'), 'https://aiplatform.us.rep.googleapis.com');
    assert.equal(vertexHost('eu'), 'https://aiplatform.eu.rep.googleapis.com');
    assert.equal(vertexHost('us-central1'), 'https://us-central1-aiplatform.googleapis.com');
    assert.equal(vertexHost('europe-west4', 'http://127.0.0.1:9/'), 'http://127.0.0.1:9');
  });

  test('model URLs: project, location (the endpoint\'s override first), publisher, model, method', () => {
    assert.equal(vertexModelUrl(target(), SETTINGS, 'gemini-2.5-flash', 'streamGenerateContent?alt=sse'), 'https://aiplatform.googleapis.com/v1/projects/proj-1/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(
      vertexModelUrl(target({ vertex: { location: 'us-east5' } }), { ...SETTINGS, publisher: 'anthropic', api_version: 'v1beta1' }, 'claude-sonnet-4-5@20250929', 'rawPredict'),
      'https://us-east5-aiplatform.googleapis.com/v1beta1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict',
    );
    // `/`, `;` and spaces encoded, as the Anthropic Vertex SDK does.
    assert.equal(vertexModelUrl(target(), SETTINGS, 'a/b;c d', 'generateContent'), 'https://aiplatform.googleapis.com/v1/projects/proj-1/locations/global/publishers/google/models/a%2Fb%3Bc%20d:generateContent');
  });
});

describe('vertex bodies', () => {
  test('a Claude body: model removed, anthropic_version vertex-2023-10-16 (replacing a client value), the rest kept', () => {
    assert.deepEqual(toVertexAnthropicBody({ model: 'claude-x', max_tokens: 5, anthropic_version: '2023-06-01', messages: [] }), { anthropic_version: 'vertex-2023-10-16', max_tokens: 5, messages: [] });
  });

  test('withRoles: a content without role gets `user`; contents with roles are kept as they are', () => {
    const ok: GeminiRequest = { contents: [{ role: 'user', parts: [{ text: 'a' }] }, { role: 'model', parts: [{ text: 'b' }] }] };
    assert.equal(withRoles(ok), ok);
    const missing = { contents: [{ parts: [{ text: 'a' }] }] } as unknown as GeminiRequest;
    assert.deepEqual(withRoles(missing).contents, [{ role: 'user', parts: [{ text: 'a' }] }]);
  });
});

describe('vertex errors: both envelopes', () => {
  const google = (code: number, status: string, message: string) => JSON.stringify({ error: { code, message, status } });
  const cases: { name: string; status: number; body: string; code: string; retryable?: boolean }[] = [
    { name: 'RESOURCE_EXHAUSTED', status: 429, body: google(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute'), code: 'upstream_rate_limited' },
    { name: 'UNAVAILABLE', status: 503, body: google(503, 'UNAVAILABLE', 'The service is currently unavailable.'), code: 'upstream_overloaded' },
    { name: 'INTERNAL', status: 500, body: google(500, 'INTERNAL', 'Internal error encountered.'), code: 'upstream_error' },
    { name: 'DEADLINE_EXCEEDED', status: 504, body: google(504, 'DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.'), code: 'upstream_timeout' },
    { name: 'UNAUTHENTICATED', status: 401, body: google(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'), code: 'upstream_auth_failed' },
    { name: 'PERMISSION_DENIED', status: 403, body: google(403, 'PERMISSION_DENIED', "Permission 'aiplatform.endpoints.predict' denied"), code: 'upstream_auth_failed' },
    { name: 'INVALID_ARGUMENT', status: 400, body: google(400, 'INVALID_ARGUMENT', 'Please use a valid role: user, model.'), code: 'upstream_bad_request' },
    { name: 'NOT_FOUND', status: 404, body: google(404, 'NOT_FOUND', 'Publisher Model `projects/p/locations/global/publishers/google/models/nope` not found.'), code: 'upstream_error' }, // the endpoint's problem (models differ by location): fails over
    { name: 'Anthropic rate_limit_error', status: 429, body: JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } }), code: 'upstream_rate_limited' },
    { name: 'Anthropic overloaded_error', status: 529, body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), code: 'upstream_overloaded' },
    { name: 'Anthropic prompt too long', status: 400, body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } }), code: 'context_length_exceeded' },
  ];
  for (const c of cases) {
    test(`${c.name} (${c.status}) → ${c.code}, the upstream message kept`, () => {
      const err = parseVertexErrorResponse('vx', c.status, {}, c.body);
      assert.equal(err.code, c.code);
      const parsed = JSON.parse(c.body) as { error: { message: string } };
      assert.ok(err.message.includes(parsed.error.message), err.message);
    });
  }

  test('which envelope: Anthropic by its `type: error`; Google by `error.status`; text is neither', () => {
    assert.equal(isAnthropicErrorBody('{"type":"error","error":{"type":"api_error","message":"x"}}'), true);
    assert.equal(isAnthropicErrorBody('{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED"}}'), false);
    assert.equal(isAnthropicErrorBody('<html>502</html>'), false);
  });

  test('Retry-After from RetryInfo on a Google 429', () => {
    const body = JSON.stringify({ error: { code: 429, message: 'Resource exhausted.', status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '7.2s' }] } });
    assert.equal(parseVertexErrorResponse('vx', 429, {}, body).retryAfterSeconds, 8);
  });
});

describe('vertex embeddings', () => {
  test(':predict answer → vectors in order, usage the sum of statistics.token_count', () => {
    const result = convertVertexEmbeddingResponse('vx', {
      predictions: [
        { embeddings: { values: [0.1, 0.2], statistics: { token_count: 3, truncated: false } } },
        { embeddings: { values: [0.3, 0.4], statistics: { token_count: 2, truncated: false } } },
      ],
    });
    assert.deepEqual(result.embeddings, [[0.1, 0.2], [0.3, 0.4]]);
    assert.deepEqual(result.usage, { promptTokens: 5, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' });
  });

  test('a prediction without a count: usage null (estimated by the gateway); no predictions: upstream_invalid_response', () => {
    assert.equal(convertVertexEmbeddingUsage([{ embeddings: { values: [1], statistics: { token_count: 3 } } }, { embeddings: { values: [1] } }]), null);
    assert.throws(() => convertVertexEmbeddingResponse('vx', { embeddings: [] }), { code: 'upstream_invalid_response' });
    assert.throws(() => convertVertexEmbeddingResponse('vx', { predictions: [{ embeddings: {} }] }), { code: 'upstream_invalid_response' });
  });
});

describe('vertex credentials and config', () => {
  test('a token failure is upstream_auth_failed naming the source, tokens redacted', () => {
    const err = tokenError('vx', 'key_file /etc/gcp/sa.json', 'request failed: {"access_token":"ya29.a0AfB_secretvalue123"} Bearer ya29.abcdefghijk');
    assert.equal(err.code, 'upstream_auth_failed');
    assert.match(err.message, /^could not obtain a Google access token from key_file \/etc\/gcp\/sa\.json: /);
    assert.doesNotMatch(err.message, /secretvalue|abcdefghijk/);
    assert.deepEqual(err.metadata, { provider_name: 'vx', credential_source: 'key_file /etc/gcp/sa.json' });
  });

  const config = (vertex: unknown, endpoint: Record<string, unknown> = {}) => ({
    providers: [{ id: 'vx', kind: 'vertex', ...(vertex === undefined ? {} : { vertex }) }],
    models: [{ id: 'g/m', context_length: 1000, endpoints: [{ provider: 'vx', upstream_model: 'gemini-2.5-flash', ...endpoint }] }],
  });

  test('defaults: location global, publisher google, api_version v1; the endpoint location override is kept', () => {
    const c = parseConfig(config({ project: 'proj-1' }, { vertex: { location: 'europe-west4' } }), 'test');
    assert.deepEqual(c.providers[0]?.vertex, { project: 'proj-1', location: 'global', publisher: 'google', api_version: 'v1' });
    assert.deepEqual(c.models[0]?.endpoints[0]?.vertex, { location: 'europe-west4' });
  });

  test('a vertex provider without `vertex`, or with bad values, is refused with the path', () => {
    const issues = (raw: unknown): readonly string[] => {
      try {
        parseConfig(raw, 'test');
      } catch (err) {
        if (err instanceof ConfigError) return err.issues;
        throw err;
      }
      return [];
    };
    assert.ok(issues(config(undefined)).includes('providers[0].vertex: required for kind "vertex"'), issues(config(undefined)).join('\n'));
    const bad = issues(config({ project: 'proj-1', location: 'US Central', publisher: 'meta', extra: 1 })).join('\n');
    assert.match(bad, /providers\[0\]\.vertex\.location: must be a Vertex location/);
    assert.match(bad, /providers\[0\]\.vertex\.publisher/);
    assert.match(bad, /providers\[0\]\.vertex.*extra/);
    assert.match(issues(config({ location: 'global' })).join('\n'), /providers\[0\]\.vertex\.project/);
    assert.deepEqual(issues(config({ project: 'proj-1', publisher: 'anthropic' }, { embeddings: true })), [
      'models[0].endpoints[0].embeddings: a vertex provider of publisher "anthropic" (Claude) serves no embeddings; use one of publisher "google"',
    ]);
    const withKey = config({ project: 'proj-1' });
    (withKey.providers[0] as Record<string, unknown>).api_key = 'AIzaSecretVertexKey0000';
    assert.deepEqual(issues(withKey), [
      'providers[0].api_key: kind "vertex" authenticates with Google credentials (vertex.key_file or Application Default Credentials) and never sends api_key: remove it',
    ]);
  });
});
