/** The pure conversions of provider kind `gemini`, value by value. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { convertGeminiResponse } from '../../src/providers/gemini/convert-gemini-response.js';
import { convertGeminiUsage } from '../../src/providers/gemini/convert-gemini-usage.js';
import { convertJsonSchemaToGemini } from '../../src/providers/gemini/convert-json-schema-to-gemini.js';
import { parseDataUrl, wrapToolResult } from '../../src/providers/gemini/convert-to-gemini-contents.js';
import { geminiUrl } from '../../src/providers/gemini/convert-to-gemini-request.js';
import { inBandGeminiError, parseGeminiErrorResponse } from '../../src/providers/gemini/gemini-error.js';
import { applyPartialArg, parseJsonPath } from '../../src/providers/gemini/gemini-partial-args.js';
import { createGeminiStreamTransform } from '../../src/providers/gemini/gemini-stream-transform.js';
import { nonPublicReason } from '../../src/providers/gemini/ip-address-policy.js';
import { mapGeminiFinishReason } from '../../src/providers/gemini/map-gemini-finish-reason.js';

describe('gemini conversions', () => {
  test('finish reasons', () => {
    const table: [string | undefined, boolean, string][] = [
      ['STOP', false, 'stop'],
      ['STOP', true, 'tool_calls'],
      ['MAX_TOKENS', true, 'length'],
      ['SAFETY', false, 'content_filter'],
      ['RECITATION', false, 'content_filter'],
      ['LANGUAGE', false, 'content_filter'],
      ['BLOCKLIST', false, 'content_filter'],
      ['PROHIBITED_CONTENT', false, 'content_filter'],
      ['SPII', false, 'content_filter'],
      ['IMAGE_SAFETY', false, 'content_filter'],
      ['MALFORMED_FUNCTION_CALL', false, 'stop'],
      ['UNEXPECTED_TOOL_CALL', false, 'stop'],
      ['OTHER', false, 'stop'],
      ['SOMETHING_NEW', false, 'stop'],
      ['SOMETHING_NEW', true, 'tool_calls'],
      [undefined, false, 'stop'],
    ];
    for (const [reason, tools, expected] of table) assert.equal(mapGeminiFinishReason(reason, tools), expected, `${reason} ${tools}`);
  });

  test('usage', () => {
    assert.equal(convertGeminiUsage({ trafficType: 'ON_DEMAND' }), null);
    assert.equal(convertGeminiUsage(undefined), null);
    assert.deepEqual(convertGeminiUsage({ promptTokenCount: 100, cachedContentTokenCount: 60, candidatesTokenCount: 20, thoughtsTokenCount: 30, toolUsePromptTokenCount: 5, totalTokenCount: 155 }), {
      promptTokens: 105, completionTokens: 50, cachedTokens: 60, cacheWriteTokens: null, reasoningTokens: 30, source: 'upstream',
    });
    assert.deepEqual(convertGeminiUsage({ promptTokenCount: 8, totalTokenCount: 8 }), {
      promptTokens: 8, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream',
    });
  });

  test('non-public addresses', () => {
    const blocked: [string, string][] = [
      ['127.0.0.1', 'loopback'], ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'],
      ['169.254.169.254', 'link-local'], ['100.64.0.1', 'carrier-grade NAT'], ['0.0.0.0', 'this network'], ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'reserved'], ['::1', 'loopback'], ['::', 'unspecified'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'],
      ['fd12:3456::1', 'unique local (private)'], ['ff02::1', 'multicast'], ['::ffff:127.0.0.1', 'loopback'], ['::ffff:a9fe:a9fe', 'link-local'],
      ['64:ff9b::10.0.0.1', 'private'], ['2002:c0a8:101::1', 'private'], ['nonsense', 'not an IP address'],
    ];
    for (const [address, reason] of blocked) assert.equal(nonPublicReason(address), reason, address);
    for (const address of ['8.8.8.8', '172.32.0.1', '1.1.1.1', '2001:4860:4860::8888', '::ffff:8.8.8.8', '2606:4700::1111']) assert.equal(nonPublicReason(address), null, address);
  });

  test('JSON paths and partial arguments', () => {
    assert.deepEqual(parseJsonPath('$.a.b[2].c'), ['a', 'b', 2, 'c']);
    assert.deepEqual(parseJsonPath("$['odd key'][0]"), ['odd key', 0]);
    assert.equal(parseJsonPath('$..a'), null);
    assert.equal(parseJsonPath('$.a[*]'), null);
    assert.equal(parseJsonPath('$.a[99999999]'), null);
    const args: Record<string, unknown> = {};
    assert.equal(applyPartialArg(args, { jsonPath: '$.steps[1]', stringValue: 'Cook', willContinue: true }), true);
    applyPartialArg(args, { jsonPath: '$.steps[1]', stringValue: ' it.' });
    applyPartialArg(args, { jsonPath: '$.n', numberValue: 3 });
    applyPartialArg(args, { jsonPath: '$.ok', boolValue: false });
    applyPartialArg(args, { jsonPath: '$.none', nullValue: 'NULL_VALUE' });
    applyPartialArg(args, { jsonPath: '$.__proto__.polluted', stringValue: 'x' });
    assert.equal(JSON.stringify(args), '{"steps":[null,"Cook it."],"n":3,"ok":false,"none":null,"__proto__":{"polluted":"x"}}');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(applyPartialArg(args, { jsonPath: '$.x' }), false);
  });

  test('schema conversion: recursive $ref ends, empty object schema has no parameters', () => {
    const tree = { type: 'object', properties: { node: { $ref: '#/$defs/node' } }, $defs: { node: { type: 'object', properties: { child: { $ref: '#/$defs/node' } } } } };
    const out = convertJsonSchemaToGemini(tree) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    let depth = 0;
    for (let n = out.properties.node; n?.properties?.child; n = n.properties.child) depth++;
    assert.equal(depth, 16);
    assert.equal(convertJsonSchemaToGemini({ type: 'object', properties: {}, additionalProperties: false }), undefined);
    assert.equal(convertJsonSchemaToGemini(undefined), undefined);
    assert.deepEqual(convertJsonSchemaToGemini({ type: 'object', properties: { v: { type: ['string', 'number'] } } }), {
      type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'number' }] } },
    });
    assert.deepEqual(convertJsonSchemaToGemini({ allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { properties: { b: { type: 'integer' } }, required: ['b'] }] }), {
      type: 'object', properties: { a: { type: 'string' }, b: { type: 'integer' } }, required: ['a', 'b'],
    });
  });

  test('URLs', () => {
    assert.equal(geminiUrl(undefined, 'gemini-2.5-flash', false), 'https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent');
    assert.equal(geminiUrl('https://g.example/', 'gemini-2.5-flash', true), 'https://g.example/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    assert.equal(geminiUrl('https://g.example/v1beta/', 'models/gemini-x', false), 'https://g.example/v1beta/models/gemini-x:generateContent');
    assert.equal(geminiUrl('https://g.example/proxy/v1alpha', 'tunedModels/my-model', false), 'https://g.example/proxy/v1alpha/tunedModels/my-model:generateContent');
  });

  test('data URLs and tool result wrapping', () => {
    assert.deepEqual(parseDataUrl('data:image/PNG;base64,iVBO\nRw=='), { mimeType: 'image/png', data: 'iVBORw==' });
    assert.deepEqual(parseDataUrl('data:text/plain,hi%20there'), { mimeType: 'text/plain', data: Buffer.from('hi there').toString('base64') });
    assert.equal(parseDataUrl('data:image/png;base64,not base64!'), undefined);
    assert.deepEqual(wrapToolResult('{"a":1}'), { a: 1 });
    assert.deepEqual(wrapToolResult('[1]'), { result: [1] });
    assert.deepEqual(wrapToolResult('null'), { result: null });
    assert.deepEqual(wrapToolResult('plain text'), { result: 'plain text' });
    assert.deepEqual(wrapToolResult(''), { result: '' });
  });

  test('error bodies: array form, in-band codes', () => {
    const e = parseGeminiErrorResponse('g', 503, {}, JSON.stringify([{ error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } }]));
    assert.equal(e.code, 'upstream_overloaded');
    assert.equal(e.message, 'overloaded');
    assert.equal(inBandGeminiError('g', { code: 429, message: 'slow down', status: 'RESOURCE_EXHAUSTED' }).code, 'upstream_rate_limited');
    assert.equal(inBandGeminiError('g', { code: 400, message: 'bad', status: 'INVALID_ARGUMENT' }).code, 'upstream_error');
    assert.equal(inBandGeminiError('g', { message: 'The input token count (5) exceeds the maximum number of tokens allowed (4).' }).code, 'context_length_exceeded');
    const timeout = parseGeminiErrorResponse('g', 500, {}, JSON.stringify({ error: { code: 500, message: 'The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).', status: 'INTERNAL' } }));
    assert.equal(timeout.code, 'context_length_exceeded');
    assert.equal(timeout.param, 'messages');
  });

  test('complete responses: a safety stop without content, thought text, no candidates', () => {
    assert.deepEqual(convertGeminiResponse('g', { candidates: [{ finishReason: 'SAFETY', index: 0 }], usageMetadata: { promptTokenCount: 7 } }), {
      content: null, reasoning: null, reasoningDetails: [], refusal: null, toolCalls: [], finishReason: 'content_filter', nativeFinishReason: 'SAFETY',
      usage: { promptTokens: 7, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' },
    });
    const thought = convertGeminiResponse('g', { candidates: [{ content: { parts: [{ text: 'hmm', thought: true }, { text: 'Yes.' }] }, finishReason: 'MAX_TOKENS' }] });
    assert.deepEqual([thought.reasoning, thought.content, thought.finishReason, thought.usage], ['hmm', 'Yes.', 'length', null]);
    assert.throws(() => convertGeminiResponse('g', { candidates: [] }), (e: Error & { code?: string }) => e.code === 'upstream_invalid_response');
    assert.throws(() => convertGeminiResponse('g', { error: { code: 500, message: 'x', status: 'INTERNAL' } }), (e: Error & { code?: string }) => e.code === 'upstream_error');
  });

  test('stream transform: finish on a chunk without parts, usage not reset, a whole call then its empty closing part', () => {
    const t = createGeminiStreamTransform('g');
    const parts = [
      ...t.push({ data: JSON.stringify({ candidates: [{ content: { parts: [{ functionCall: { name: 'f', args: { a: 1 } } }] } }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 } }) }),
      ...t.push({ data: JSON.stringify({ candidates: [{ content: { parts: [{ functionCall: {} }] } }], usageMetadata: { trafficType: 'ON_DEMAND' } }) }),
      ...t.push({ data: JSON.stringify({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { trafficType: 'ON_DEMAND' } }) }),
      ...t.push({ data: '' }),
      ...t.flush(),
    ];
    const usage = { type: 'usage', usage: { promptTokens: 3, completionTokens: 2, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' } };
    const start = parts[0] as { type: string; id: string };
    assert.match(start.id, /^call_/);
    assert.deepEqual(parts, [
      { type: 'tool-call-start', index: 0, id: start.id, name: 'f' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"a":1}' },
      usage,
      { type: 'finish', finishReason: 'tool_calls', nativeFinishReason: 'STOP' },
      usage,
    ]);
    const bad = createGeminiStreamTransform('g');
    const err = bad.push({ data: 'not json' });
    assert.equal(err[0]!.type, 'error');
    assert.deepEqual(bad.flush(), []);
  });
});
