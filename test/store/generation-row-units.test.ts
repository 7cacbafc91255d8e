/**
 * The row of a generation record (src/store/generation-row.ts `generationRow`), called directly
 * without a gateway or database: a record with specific fields gives exactly this row; text (the
 * error message, `content`) only when retention keeps it; `detail.error` under every retention,
 * its upstream message only with `keepUpstreamErrorMessage`; the pipeline's `GenerationDraft`
 * is such a record.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generationRow, type GenerationRecord } from '../../src/store/generation-row.js';
import { GENERATION_COLUMNS, type GenerationsTable } from '../../src/store/schema.js';
import { GenerationDraft } from '../../src/pipeline/state/generation-draft.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

/** A failed, streamed `messages` generation after one attempt, with usage, tags, session, text and an upstream error. */
function failedRecord(retention: 'none' | number, over: Partial<GenerationRecord> = {}): GenerationRecord {
  return {
    id: 'gen_1',
    requestId: 'req_1',
    createdAt: 1_700_000_000_000,
    keyId: 'key_1',
    api: 'messages',
    streamed: true,
    requestedModel: 'a/model',
    servedModel: 'a/model',
    provider: 'prov',
    endpoint: 'prov/a',
    upstreamModel: 'up-model',
    status: 'error',
    errorCode: 'upstream_error',
    errorMessage: 'boom says "x"',
    errorParam: 'messages[0]',
    upstreamError: { status: 500, code: 'c'.repeat(300), type: 'server_error', param: 'p', message: 'upstream msg' },
    httpStatus: 502,
    finishReason: 'stop',
    nativeFinishReason: 'end_turn',
    cancelled: false,
    usage: { promptTokens: 10, completionTokens: 5, cachedTokens: 3, cacheWriteTokens: 2, reasoningTokens: 1, source: 'upstream' },
    costPico: 42n,
    ttftMs: 99,
    attempts: [{ endpoint: 'prov/a', provider: 'prov', model: 'up-model', status: 500, error_code: 'upstream_error', latency_ms: 12, reason: 'provider.order' }],
    dropped: ['seed'],
    routingReason: 'provider.order',
    warnings: ['w1'],
    providerMetadata: null,
    cacheHit: true,
    tags: ['t1', 'preset:x'],
    session: 'sess',
    retention,
    content: { request: { m: 1 }, output: 'hi' },
    elapsed: () => 1234,
    ...over,
  };
}

/** The row of {@link failedRecord} but for the retention-dependent columns and `detail`. */
const FAILED_ROW: Omit<GenerationsTable, 'error_message' | 'retention' | 'detail' | 'content'> = {
  id: 'gen_1',
  request_id: 'req_1',
  created_at: 1_700_000_000_000,
  key_id: 'key_1',
  requested_model: 'a/model',
  served_model: 'a/model',
  provider: 'prov',
  endpoint: 'prov/a',
  upstream_model: 'up-model',
  status: 'error',
  error_code: 'upstream_error',
  http_status: 502,
  finish_reason: 'stop',
  native_finish_reason: 'end_turn',
  api: 'messages',
  streamed: 1,
  cancelled: 0,
  prompt_tokens: 10,
  completion_tokens: 5,
  reasoning_tokens: 1,
  cached_tokens: 3,
  cache_write_tokens: 2,
  usage_source: 'upstream',
  cost_pico: 42n,
  latency_ms: 1234,
  ttft_ms: 99,
  tags: '["t1","preset:x"]',
  session: 'sess',
  end_user: null,
  batch_id: null,
  custom_id: null,
};

const ATTEMPTS = '[{"endpoint":"prov/a","provider":"prov","model":"up-model","status":500,"error_code":"upstream_error","latency_ms":12,"reason":"provider.order"}]';
const CUT_CODE = 'c'.repeat(256);
const detailText = (upstreamTail: string) =>
  `{"attempts":${ATTEMPTS},"routing_reason":"provider.order","dropped_parameters":["seed"],"warnings":["w1"],"cache_hit":true,` +
  `"error":{"param":"messages[0]","upstream":{"status":500,"code":"${CUT_CODE}","type":"server_error","param":"p"${upstreamTail}}}}`;

describe('generationRow', () => {
  test('retention none: no error message, no content; detail.error without the upstream message', () => {
    assert.deepEqual(generationRow(failedRecord('none'), false), { ...FAILED_ROW, error_message: null, retention: 'none', detail: detailText(''), content: null });
  });

  test('retention none with keepUpstreamErrorMessage: the upstream message in detail.error, still no other text', () => {
    assert.deepEqual(generationRow(failedRecord('none'), true), { ...FAILED_ROW, error_message: null, retention: 'none', detail: detailText(',"message":"upstream msg"'), content: null });
  });

  test('retention 30 days: the error message and content kept; the upstream message only with keepUpstreamErrorMessage', () => {
    const kept = { ...FAILED_ROW, error_message: 'boom says "x"', retention: '30', content: '{"request":{"m":1},"output":"hi"}' };
    assert.deepEqual(generationRow(failedRecord(30), false), { ...kept, detail: detailText('') });
    assert.deepEqual(generationRow(failedRecord(30), true), { ...kept, detail: detailText(',"message":"upstream msg"') });
  });

  test('columns in the order of GENERATION_COLUMNS; detail keys attempts, routing_reason, dropped_parameters, warnings, cache_hit, error', () => {
    const row = generationRow(failedRecord(30), true);
    assert.deepEqual(Object.keys(row), GENERATION_COLUMNS);
    assert.deepEqual(Object.keys(JSON.parse(row.detail) as object), ['attempts', 'routing_reason', 'dropped_parameters', 'warnings', 'cache_hit', 'error']);
  });

  test('no upstream error: detail.error.upstream null; a numeric upstream code kept as is', () => {
    const noUpstream = JSON.parse(generationRow(failedRecord('none', { upstreamError: null, errorParam: null }), true).detail) as { error: unknown };
    assert.deepEqual(noUpstream.error, { param: null, upstream: null });
    const numeric = JSON.parse(generationRow(failedRecord('none', { upstreamError: { status: 429, code: 1008, type: null, param: null, message: 'm' } }), false).detail) as { error: unknown };
    assert.deepEqual(numeric.error, { param: 'messages[0]', upstream: { status: 429, code: 1008, type: null, param: null } });
  });

  test('a cancelled record has no detail.error; no usage gives null token columns; no cache hit, no cache_hit key', () => {
    const row = generationRow(failedRecord(30, { status: 'cancelled', cancelled: true, errorCode: 'client_closed_request', httpStatus: 499, usage: null, cacheHit: false, tags: [] }), true);
    assert.equal(row.detail, `{"attempts":${ATTEMPTS},"routing_reason":"provider.order","dropped_parameters":["seed"],"warnings":["w1"]}`);
    assert.deepEqual(
      [row.status, row.cancelled, row.error_code, row.http_status, row.prompt_tokens, row.completion_tokens, row.reasoning_tokens, row.cached_tokens, row.cache_write_tokens, row.usage_source, row.tags],
      ['cancelled', 1, 'client_closed_request', 499, null, null, null, null, null, null, '[]'],
    );
  });

  test('a GenerationDraft is a record: a fresh chat draft, then cancelled', () => {
    const d = new GenerationDraft('gen_2', 'req_2', null, 'chat', false, 'b/model');
    (d as { createdAt: number }).createdAt = 5;
    d.elapsed = () => 7;
    const fresh: GenerationsTable = {
      id: 'gen_2', request_id: 'req_2', created_at: 5, key_id: null, requested_model: 'b/model', served_model: null, provider: null, endpoint: null,
      upstream_model: null, status: 'success', error_code: null, error_message: null, http_status: 200, finish_reason: null, native_finish_reason: null,
      api: 'chat', streamed: 0, cancelled: 0, prompt_tokens: null, completion_tokens: null, reasoning_tokens: null, cached_tokens: null,
      cache_write_tokens: null, usage_source: null, cost_pico: 0n, latency_ms: 7, ttft_ms: null, tags: '[]', session: null, end_user: null, batch_id: null, custom_id: null, retention: 'none',
      detail: '{"attempts":[],"routing_reason":null,"dropped_parameters":[],"warnings":[]}', content: null,
    };
    assert.deepEqual(generationRow(d, false), fresh);
    d.cancel();
    assert.deepEqual(generationRow(d, true), { ...fresh, status: 'cancelled', error_code: 'client_closed_request', http_status: 499, cancelled: 1 });
  });

  test('provider metadata goes in detail.provider_metadata, after warnings and before cache_hit and error', () => {
    const meta = { content_filter_results: { hate: { filtered: false, severity: 'safe' } } };
    const row = generationRow(failedRecord(30, { providerMetadata: meta }), false);
    assert.deepEqual(Object.keys(JSON.parse(row.detail) as object), ['attempts', 'routing_reason', 'dropped_parameters', 'warnings', 'provider_metadata', 'cache_hit', 'error']);
    assert.deepEqual((JSON.parse(row.detail) as { provider_metadata: unknown }).provider_metadata, meta);
  });

  test('draft.fail keeps a failure\'s metadata.provider_metadata (a blocked prompt\'s filter verdict) as the record\'s provider metadata', () => {
    const d = new GenerationDraft('gen_3', 'req_3', null, 'chat', false, 'b/model');
    const verdict = { content_filter_result: { jailbreak: { filtered: true, detected: true } } };
    d.fail(new GatewayError('content_filtered', 'filtered', { param: 'prompt', metadata: { provider_name: 'az', provider_metadata: verdict } }));
    assert.deepEqual(d.providerMetadata, verdict);
    assert.deepEqual((JSON.parse(generationRow(d, false).detail) as { provider_metadata: unknown }).provider_metadata, verdict);
  });

  test('a failed GenerationDraft (draft.fail) gives the same row as the record of the same fields', () => {
    const d = new GenerationDraft('gen_1', 'req_1', 'key_1', 'messages', true, 'a/model', ['t1', 'preset:x'], 'sess', 30);
    (d as { createdAt: number }).createdAt = 1_700_000_000_000;
    d.elapsed = () => 1234;
    Object.assign(d, { servedModel: 'a/model', provider: 'prov', endpoint: 'prov/a', upstreamModel: 'up-model', finishReason: 'stop', nativeFinishReason: 'end_turn', costPico: 42n, ttftMs: 99 });
    Object.assign(d, { dropped: ['seed'], warnings: ['w1'], routingReason: 'provider.order', cacheHit: true, content: { request: { m: 1 }, output: 'hi' }, httpStatus: 502 });
    d.usage = { promptTokens: 10, completionTokens: 5, cachedTokens: 3, cacheWriteTokens: 2, reasoningTokens: 1, source: 'upstream' };
    d.attempts.push({ endpoint: 'prov/a', provider: 'prov', model: 'up-model', status: 500, error_code: 'upstream_error', latency_ms: 12, reason: 'provider.order' });
    d.fail(new GatewayError('upstream_error', 'boom says "x"', { param: 'messages[0]', upstream: { status: 500, code: 'c'.repeat(300), type: 'server_error', param: 'p', message: 'upstream msg' } }));
    assert.deepEqual(generationRow(d, true), generationRow(failedRecord(30), true));
  });
});
