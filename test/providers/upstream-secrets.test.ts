/**
 * Upstream error messages reach clients and the database without secrets and without the
 * gateway's internal provider-id prefix (issue 9 §1): an upstream that quotes the
 * `Authorization` header, the configured key, an `x-api-key` / `x-goog-api-key` value or a
 * `key=` query value gets them replaced with `[redacted]`, for every provider kind, in error
 * responses and in error events inside a stream. The provider id is in `metadata.provider_name`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { providerSecrets, redactAndTruncate, redactSecrets } from '../../src/providers/upstream-errors.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const API_KEY = 'sk-test-CONFIGURED-0123456789abcdef';
const HEADER_SECRET = 'hdr-secret-value-9876';
const GOOGLE_KEY = 'AIzaSyD-FAKE-google-key-0123456789abcd';
/** What a careless upstream (or a proxy in front of it) says back. */
const LEAKY = `Invalid credentials: Authorization: Bearer ${API_KEY}; x-api-key: ${API_KEY}; x-goog-api-key=${GOOGLE_KEY}; ` +
  `see https://upstream.example/v1/models?key=${GOOGLE_KEY}&alt=sse; extra header ${HEADER_SECRET}`;
const SECRETS = [API_KEY, HEADER_SECRET, GOOGLE_KEY];

let openai: Upstream;
let claude: Upstream;
let gemini: Upstream;
let gw: TestGateway;

before(async () => {
  [openai, claude, gemini] = await Promise.all([startUpstream(), startUpstream(), startUpstream()]);
  const provider = (id: string, kind: string, baseUrl: string) => ({ id, kind, base_url: baseUrl, api_key: API_KEY, headers: { 'x-extra-auth': HEADER_SECRET } });
  const model = (id: string, providerId: string) => ({ id, context_length: 8192, endpoints: [{ provider: providerId, upstream_model: 'm', supported_parameters: ['max_tokens'] }] });
  gw = await startGateway({
    retention: 30,
    providers: [provider('oa-internal', 'openai', openai.url), provider('claude-internal', 'anthropic', claude.url), provider('gem-internal', 'gemini', new URL(gemini.url).origin)],
    models: [model('t/openai', 'oa-internal'), model('t/claude', 'claude-internal'), model('t/gemini', 'gem-internal')],
  });
});

after(async () => {
  await gw?.close();
  await Promise.all([openai?.close(), claude?.close(), gemini?.close()]);
});

async function post(model: string, stream = false): Promise<{ status: number; text: string; generationId: string | null }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, text: await res.text(), generationId: res.headers.get('x-op-generation-id') };
}

async function lastErrorMessage(): Promise<string | null> {
  await gw.flush();
  const row = await gw.store.db.selectFrom('generations').select(['error_message', 'created_at']).orderBy('created_at', 'desc').executeTakeFirstOrThrow();
  return row.error_message;
}

function assertScrubbed(text: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `secret ${secret.slice(0, 8)}… leaked: ${text}`);
}

describe('upstream errors are client-safe for every provider kind', () => {
  const cases: Array<{ name: string; model: string; providerId: string; upstream: () => Upstream; body: unknown; upstreamCode: string | null }> = [
    { name: 'openai', model: 't/openai', providerId: 'oa-internal', upstream: () => openai, body: { error: { message: LEAKY, type: 'invalid_request_error', code: 'invalid_api_key' } }, upstreamCode: 'invalid_api_key' },
    { name: 'anthropic', model: 't/claude', providerId: 'claude-internal', upstream: () => claude, body: { type: 'error', error: { type: 'authentication_error', message: LEAKY } }, upstreamCode: 'authentication_error' },
    { name: 'gemini', model: 't/gemini', providerId: 'gem-internal', upstream: () => gemini, body: { error: { code: 401, message: LEAKY, status: 'UNAUTHENTICATED' } }, upstreamCode: 'UNAUTHENTICATED' },
  ];
  for (const c of cases) {
    test(`${c.name}: a 401 quoting the key → 502 upstream_auth_failed, secrets [redacted] in the answer and the record`, async () => {
      c.upstream().enqueue({ status: 401, json: c.body });
      const res = await post(c.model);
      assert.equal(res.status, 502);
      assertScrubbed(res.text);
      const error = (JSON.parse(res.text) as Json).error as Json;
      assert.equal(error.code, 'upstream_auth_failed');
      assert.equal(
        error.message,
        'Invalid credentials: Authorization: [redacted]; x-api-key: [redacted]; x-goog-api-key=[redacted]; see https://upstream.example/v1/models?key=[redacted]&alt=sse; extra header [redacted]',
      );
      assert.deepEqual(error.metadata, { provider_name: c.providerId, upstream_status: 401, upstream_code: c.upstreamCode });
      const stored = await lastErrorMessage();
      assert.equal(stored, error.message);
    });
  }

  test('openai: an error event inside a 200 stream is scrubbed too, without the provider prefix', async () => {
    openai.enqueue({ rawChunks: [`data: ${JSON.stringify({ error: { message: `upstream said: Bearer ${API_KEY} is over quota`, code: 429 } })}\n\n`] });
    const res = await post('t/openai', true);
    assertScrubbed(res.text);
    const error = (JSON.parse(res.text) as Json).error as Json;
    assert.equal(error.code, 'upstream_rate_limited');
    assert.equal(error.message, 'upstream said: Bearer [redacted] is over quota');
    assert.equal(error.metadata.provider_name, 'oa-internal');
    assert.equal(error.metadata.provider, undefined);
    assert.equal(await lastErrorMessage(), error.message);
  });

  test('openai: param, code, type and metadata quoting the key are redacted too (client and record)', async () => {
    openai.enqueue({ status: 400, json: { error: { message: 'bad', code: API_KEY, type: HEADER_SECRET, param: `headers.x-extra-auth=${HEADER_SECRET}`, metadata: { raw: API_KEY, nested: { k: HEADER_SECRET } } } } });
    const res = await post('t/openai');
    assert.equal(res.status, 400);
    assertScrubbed(res.text);
    const error = (JSON.parse(res.text) as Json).error as Json;
    assert.equal(error.param, 'headers.x-extra-auth=[redacted]');
    assert.equal(error.metadata.upstream_code, '[redacted]');
    assertScrubbed(String(await lastErrorMessage()));
  });

  for (const pad of [1990, 1995, 1999]) {
    test(`openai: a key crossing the ${2000}-character cut (at ${pad}) is redacted before the cut, client and record`, async () => {
      openai.enqueue({ status: 401, json: { error: { message: `${'x'.repeat(pad)}${HEADER_SECRET} and more text after it`, code: 'invalid_api_key' } } });
      const res = await post('t/openai');
      const error = (JSON.parse(res.text) as Json).error as Json;
      assert.ok(!String(error.message).includes(HEADER_SECRET.slice(0, 5)), `prefix of the secret leaked: …${String(error.message).slice(-30)}`);
      assert.ok(String(error.message).length <= 2000 + '[redacted]'.length);
      assert.ok(String(error.message).startsWith('x'.repeat(pad)));
      const stored = String(await lastErrorMessage());
      assert.ok(!stored.includes(HEADER_SECRET.slice(0, 5)));
    });
  }

  test('a huge upstream message, code and param are bounded', async () => {
    openai.enqueue({ status: 400, json: { error: { message: 'L'.repeat(20_000), code: 'C'.repeat(20_000), param: 'P'.repeat(20_000) } } });
    const res = await post('t/openai');
    const error = (JSON.parse(res.text) as Json).error as Json;
    assert.equal(error.message.length, 2000, JSON.stringify(error).slice(0, 300));
    assert.equal(error.param?.length, 256, JSON.stringify({ ...error, message: 0, metadata: 0 }));
    assert.equal(error.metadata.upstream_code.length, 2000);
  });

  test('anthropic: a stream that ends early is reported without the provider prefix', async () => {
    claude.enqueue({ sse: [JSON.stringify({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], model: 'm', usage: { input_tokens: 1, output_tokens: 0 } } })], framing: 'anthropic' });
    const res = await post('t/claude', true);
    const error = (JSON.parse(res.text) as Json).error as Json;
    assert.doesNotMatch(error.message, /claude-internal/);
    assert.equal(error.metadata.provider_name, 'claude-internal');
  });
});

describe('redactSecrets', () => {
  test('exact configured values and credential shapes are replaced; ordinary text is kept', () => {
    assert.equal(redactSecrets('authorization: Basic dXNlcjpwYXNz, ok', []), 'authorization: [redacted], ok');
    assert.equal(redactSecrets('{"api_key":"abc123xyz"}'), '{"api_key":"[redacted]"}');
    assert.equal(redactSecrets('GET /v1beta/models/x:generateContent?alt=sse&key=AIzaXYZ 400'), 'GET /v1beta/models/x:generateContent?alt=sse&key=[redacted] 400');
    assert.equal(redactSecrets('token my-private-proxy-token rejected', ['my-private-proxy-token']), 'token [redacted] rejected');
    assert.equal(redactSecrets('The model `gpt-x` does not exist', ['sk-whatever-long']), 'The model `gpt-x` does not exist');
    assert.equal(redactSecrets('Incorrect API key provided: sk-proj-abcdefghijklmnop1234.'), 'Incorrect API key provided: [redacted].');
    // AWS: a session token named as a header or query parameter, and the shapes of STS session tokens.
    assert.equal(redactSecrets('signed with X-Amz-Security-Token: abcDEF123/xyz= and more'), 'signed with X-Amz-Security-Token: [redacted] and more');
    assert.equal(redactSecrets('?X-Amz-Security-Token=abc%2Fdef&X-Amz-Date=1'), '?X-Amz-Security-Token=[redacted]&X-Amz-Date=1');
    assert.equal(redactSecrets('token IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQ== is invalid'), 'token [redacted] is invalid');
    assert.equal(redactSecrets('old FwoGZXIvYXdzEBYaDHqa0AP1ABCDEFGH is invalid'), 'old [redacted] is invalid');
  });

  test('redactAndTruncate: redact first, then cut; a cut tail that starts a secret is redacted too', () => {
    const secret = 'abcdefghijklmnop';
    assert.equal(redactAndTruncate(`${'a'.repeat(10)}${secret} tail`, [secret], 20), `${'a'.repeat(10)}[redacted]`);
    // The upstream cut the key itself: its first 12 characters end the text after our cut.
    assert.equal(redactAndTruncate(`${'z'.repeat(10)}${secret.slice(0, 12)}${'q'.repeat(50)}`, [secret], 22), `${'z'.repeat(10)}[redacted]`);
    assert.equal(redactAndTruncate('short text', [secret], 2000), 'short text');
  });

  test('providerSecrets: the key and header values, longest first, short values skipped', () => {
    assert.deepEqual(providerSecrets({ api_key: 'Bearer abcdefgh', headers: { 'x-a': 'longer-secret-value', 'x-b': 'no' } }), ['longer-secret-value', 'abcdefgh']);
  });
});
