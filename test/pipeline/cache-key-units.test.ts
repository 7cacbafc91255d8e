/**
 * The response cache's key and TTL policy (src/cache/cache-key.ts) called directly: canonical
 * JSON, scopes, which fields and headers take part in the hash, and which of request, key and
 * model decides the TTL.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cacheKey, cacheScope, cacheTtlSeconds, canonicalJson, type CacheAsk } from '../../src/cache/cache-key.js';

describe('canonicalJson', () => {
  test('object keys sorted at every depth, arrays in order, undefined members left out', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    assert.equal(canonicalJson([2, 1]), '[2,1]');
  });

  test('scalars as JSON; undefined as null', () => {
    assert.equal(canonicalJson('x'), '"x"');
    assert.equal(canonicalJson(1.5), '1.5');
    assert.equal(canonicalJson(null), 'null');
    assert.equal(canonicalJson(undefined), 'null');
  });
});

describe('cacheScope', () => {
  test('the admin key, a key of its own, a shared scope by position', () => {
    assert.equal(cacheScope(null, [['k1']]), 'admin');
    assert.equal(cacheScope('k9', [['k1', 'k2'], ['k3']]), 'key:k9');
    assert.equal(cacheScope('k3', [['k1', 'k2'], ['k3']]), 'shared:1');
    assert.equal(cacheScope('k2', [['k1', 'k2'], ['k2']]), 'shared:0', 'the first scope that lists the key');
  });
});

describe('cacheKey', () => {
  const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 0 };

  test('hex SHA-256 of scope, API and the canonical body', () => {
    const expected = createHash('sha256').update(`key:k1\nchat\n${canonicalJson(body)}`).digest('hex');
    assert.equal(cacheKey('key:k1', 'chat', body), expected);
    assert.match(expected, /^[0-9a-f]{64}$/);
  });

  test('stream, stream_options and op do not change the key; key order does not either', () => {
    const k = cacheKey('key:k1', 'chat', body);
    assert.equal(cacheKey('key:k1', 'chat', { ...body, stream: true, stream_options: { include_usage: true }, op: { cache: true } }), k);
    assert.equal(cacheKey('key:k1', 'chat', { temperature: 0, messages: body.messages, model: 'm' }), k);
  });

  test('another scope, API, model or field is another key', () => {
    const k = cacheKey('key:k1', 'chat', body);
    const others = [cacheKey('key:k2', 'chat', body), cacheKey('key:k1', 'responses', body), cacheKey('key:k1', 'chat', { ...body, model: 'n' }), cacheKey('key:k1', 'chat', { ...body, temperature: 1 })];
    for (const o of others) assert.notEqual(o, k);
    assert.equal(new Set(others).size, others.length);
  });

  test('forwarded headers take part only when sent, in any order', () => {
    const k = cacheKey('key:k1', 'messages', body);
    assert.equal(cacheKey('key:k1', 'messages', body, {}), k);
    const beta = cacheKey('key:k1', 'messages', body, { 'anthropic-beta': 'x', 'anthropic-version': '2023-06-01' });
    assert.notEqual(beta, k);
    assert.equal(cacheKey('key:k1', 'messages', body, { 'anthropic-version': '2023-06-01', 'anthropic-beta': 'x' }), beta);
    assert.equal(beta, createHash('sha256').update(`key:k1\nmessages\n${canonicalJson(body)}\n{"anthropic-beta":"x","anthropic-version":"2023-06-01"}`).digest('hex'));
  });
});

describe('cacheTtlSeconds', () => {
  const ask = (over: Partial<CacheAsk>): CacheAsk => ({ request: undefined, requestTtl: undefined, key: undefined, model: undefined, ...over });
  const ttl = (over: Partial<CacheAsk>, retentionNone = false) => cacheTtlSeconds(ask(over), retentionNone, 300, 3600);

  test('nobody asks: no caching', () => {
    assert.equal(ttl({}), undefined);
    assert.equal(ttl({ key: null }), undefined);
  });

  test('the request wins: op.cache false turns off what key and model ask', () => {
    assert.equal(ttl({ request: false, key: true, model: 60 }), undefined);
    assert.equal(ttl({ request: true }), 300, 'the default TTL');
    assert.equal(ttl({ request: true, requestTtl: 20, key: 90 }), 20);
  });

  test('then the key, then the model; a number is the TTL', () => {
    assert.equal(ttl({ key: 90, model: 60 }), 90);
    assert.equal(ttl({ key: true, model: 60 }), 60, 'the key asks, the model says how long');
    assert.equal(ttl({ key: null, model: 60 }), 60);
    assert.equal(ttl({ key: false, model: true }), undefined, 'a key with cache false is not cached by the model');
    assert.equal(ttl({ model: true }), 300);
    assert.equal(ttl({ request: true, key: 45 }), 45);
  });

  test('bounded by the maximum; retention none is never cached', () => {
    assert.equal(ttl({ request: true, requestTtl: 86_400 }), 3600);
    assert.equal(ttl({ key: 7200 }), 3600);
    assert.equal(ttl({ request: true, key: true, model: true }, true), undefined);
  });
});
