import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';

const base = {
  providers: [{ id: 'groq', kind: 'openai', base_url: 'https://api.groq.com/openai/v1', api_key: '${GROQ_API_KEY}' }],
  models: [{ id: 'openai/gpt-oss-120b', context_length: 131072, endpoints: [{ provider: 'groq', upstream_model: 'openai/gpt-oss-120b', max_completion_tokens: 32768 }] }],
};

function issuesOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.issues;
  }
  assert.fail('expected a ConfigError');
}

test('config: ${VAR} is replaced from the environment and the result is frozen', () => {
  const config = parseConfig(base, 'x.yaml', { GROQ_API_KEY: 'gsk-123' });
  assert.equal(config.providers[0]!.api_key, 'gsk-123');
  assert.equal(config.providers[0]!.timeouts.first_token_ms, 60000);
  assert.equal(Object.isFrozen(config.models[0]!.endpoints[0]), true);
  assert.throws(() => {
    (config.providers as unknown as unknown[]).push({});
  }, TypeError);
});

test('config: an unset variable is named with its config path', () => {
  assert.deepEqual(issuesOf(() => parseConfig(base, 'x.yaml', {})), ['providers[0].api_key: environment variable GROQ_API_KEY is not set']);
  const withDefault = structuredClone(base);
  withDefault.providers[0]!.api_key = '${GROQ_API_KEY:-fallback}';
  assert.equal(parseConfig(withDefault, 'x.yaml', {}).providers[0]!.api_key, 'fallback');
});

test('config: unknown keys are rejected with their path', () => {
  const bad = structuredClone(base) as unknown as { models: { endpoints: Record<string, unknown>[] }[] };
  bad.models[0]!.endpoints[0]!.pricng = { prompt: 1 };
  assert.deepEqual(issuesOf(() => parseConfig(bad, 'x.yaml', { GROQ_API_KEY: 'k' })), ['models[0].endpoints[0].pricng: unknown key']);
});

test('config: a dangling provider reference is rejected and the known ids listed', () => {
  const bad = structuredClone(base);
  bad.models[0]!.endpoints[0]!.provider = 'grok';
  assert.deepEqual(issuesOf(() => parseConfig(bad, 'x.yaml', { GROQ_API_KEY: 'k' })), [
    'models[0].endpoints[0].provider: unknown provider "grok" (known: groq)',
  ]);
});

test('config: wrong types, duplicate ids and limits beyond the context are reported', () => {
  const bad = structuredClone(base) as unknown as { models: Record<string, unknown>[] };
  bad.models[0]!.context_length = 'big';
  assert.deepEqual(issuesOf(() => parseConfig(bad, 'x.yaml', { GROQ_API_KEY: 'k' })), ['models[0].context_length: Expected number, received string']);
  const dup = structuredClone(base);
  dup.models.push(structuredClone(dup.models[0]!));
  dup.models[1]!.endpoints[0]!.max_completion_tokens = 200000;
  assert.deepEqual(issuesOf(() => parseConfig(dup, 'x.yaml', { GROQ_API_KEY: 'k' })), [
    'models[1].id: duplicate model id "openai/gpt-oss-120b"',
    'models[1].endpoints[0].max_completion_tokens: 200000 exceeds the context length 131072',
  ]);
});

test('config: prices with more than 6 decimals are refused (money stays exact)', () => {
  const bad = structuredClone(base) as unknown as { models: { endpoints: Record<string, unknown>[] }[] };
  bad.models[0]!.endpoints[0]!.pricing = { prompt: '0.0000001' };
  assert.deepEqual(issuesOf(() => parseConfig(bad, 'x.yaml', { GROQ_API_KEY: 'k' })), [
    'models[0].endpoints[0].pricing.prompt: must be a non-negative decimal with at most 10 digits before the point and 6 after it',
  ]);
});

test('config: a missing default file gives the empty catalog; a missing named file is an error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'op-cfg-'));
  const loaded = loadConfig(join(dir, 'opinference.yaml'));
  assert.equal(loaded.source, null);
  assert.equal(loaded.config.models.length, 0);
  assert.deepEqual(issuesOf(() => loadConfig(join(dir, 'nope.yaml'), { required: true })), ['(file): not found']);
});

test('config: an empty file is refused (a truncated save must not wipe the catalog)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'op-cfg-'));
  const file = join(dir, 'empty.yaml');
  writeFileSync(file, '  \n');
  assert.deepEqual(issuesOf(() => loadConfig(file)), ['(file): the file is empty (a truncated save?); to run with no models, remove the file']);
});

test('config: YAML syntax errors and the example config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'op-cfg-'));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, 'providers:\n  - id: [unclosed\n');
  const issues = issuesOf(() => loadConfig(file));
  assert.equal(issues.length >= 1, true);
  assert.match(issues[0]!, /^\(yaml\): /);
  const example = loadConfig(new URL('../../examples/opinference.yaml', import.meta.url).pathname, { env: {}, required: true });
  assert.equal(example.config.models.length, 2);
  assert.equal(example.config.providers[1]!.base_url, 'http://127.0.0.1:8000/v1');
});

test('config: the server timeouts cross-check is reported with the other server errors, once', () => {
  const withServer = (server: Record<string, unknown>) => ({ ...(base as Record<string, unknown>), server });
  // Other server.* fields wrong as well: the cross-field check still runs (zod skips an object's refine then).
  assert.deepEqual(issuesOf(() => parseConfig(withServer({ body_limit_bytes: 'ten', headers_timeout_ms: 200_000, request_timeout_ms: 1000 }), 'x.yaml', { GROQ_API_KEY: 'k' })), [
    'server.body_limit_bytes: Expected number, received string',
    'server.headers_timeout_ms: headers_timeout_ms must not be longer than request_timeout_ms',
  ]);
  // Alone it is listed once; against the default request_timeout_ms (120 s) too.
  assert.deepEqual(issuesOf(() => parseConfig(withServer({ headers_timeout_ms: 200_000, request_timeout_ms: 1000 }), 'x.yaml', { GROQ_API_KEY: 'k' })), ['server.headers_timeout_ms: headers_timeout_ms must not be longer than request_timeout_ms']);
  assert.deepEqual(issuesOf(() => parseConfig(withServer({ headers_timeout_ms: 200_000, bogus: 1 }), 'x.yaml', { GROQ_API_KEY: 'k' })), [
    'server.bogus: unknown key',
    'server.headers_timeout_ms: headers_timeout_ms must not be longer than request_timeout_ms',
  ]);
});
