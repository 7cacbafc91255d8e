/**
 * A key's `allowed_models` (issue 9 §5): checked against the catalog when a key is created or
 * changed through the admin API, and the key sees only those models in `/v1/models` and only
 * the providers serving them in `/v1/providers`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let gw: TestGateway;

before(async () => {
  const config = oneModelConfig('http://127.0.0.1:9');
  config.models.push({ ...config.models[0]!, id: 'test/other', name: 'Other' });
  gw = await startGateway(config);
});
after(async () => {
  await gw?.close();
});

async function call(key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe('allowed_models', () => {
  test('unknown model ids are a 400 naming the entry, on create and on update', async () => {
    const created = await call(gw.adminKey, 'POST', '/keys', { name: 'typo', allowed_models: ['test/model', 'test/modle'] });
    assert.equal(created.status, 400);
    assert.equal(created.body.error.code, 'invalid_request');
    assert.equal(created.body.error.param, 'allowed_models[1]');
    assert.equal(created.body.error.message, 'allowed_models[1]: no model "test/modle" in the catalog (known: test/model, test/other)');
    const listed = await call(gw.adminKey, 'GET', '/keys');
    assert.equal(listed.body.data.filter((k: Json) => k.name === 'typo').length, 0, 'no key was created');
    const ok = await call(gw.adminKey, 'POST', '/keys', { name: 'scoped', allowed_models: ['test/model'] });
    assert.equal(ok.status, 201);
    const patched = await call(gw.adminKey, 'PATCH', `/keys/${ok.body.data.id}`, { allowed_models: ['nope/nope'] });
    assert.equal(patched.status, 400);
    assert.equal(patched.body.error.param, 'allowed_models[0]');
    assert.deepEqual((await call(gw.adminKey, 'GET', `/keys/${ok.body.data.id}`)).body.data.allowed_models, ['test/model']);
  });

  test('a key with allowed_models sees only those in /v1/models; the others are a 404', async () => {
    const created = await call(gw.adminKey, 'POST', '/keys', { name: 'viewer', allowed_models: ['test/other'] });
    const key = created.body.key as string;
    const models = await call(key, 'GET', '/models');
    assert.equal(models.status, 200);
    assert.deepEqual(models.body.data.map((m: Json) => m.id), ['test/other']);
    assert.equal((await call(key, 'GET', '/models/test/other')).status, 200);
    for (const path of ['/models/test/model', '/models/test%2Fmodel', '/models/test/model/endpoints']) {
      const hidden = await call(key, 'GET', path);
      assert.equal(hidden.status, 404, path);
      assert.equal(hidden.body.error.message, 'no model "test/model" in the catalog');
    }
    const all = await call(gw.adminKey, 'GET', '/models');
    assert.deepEqual(all.body.data.map((m: Json) => m.id), ['test/model', 'test/other']);
    const unrestricted = await gw.createKey('all');
    assert.equal((await call(unrestricted.secret, 'GET', '/models')).body.data.length, 2);
  });
});

describe('allowed_models and /v1/providers', () => {
  test('a key with allowed_models sees only the providers that serve an allowed model', async () => {
    const config = oneModelConfig('http://127.0.0.1:9');
    const base = config.models[0]!;
    config.providers.push({ ...config.providers[0]!, id: 'second' }, { ...config.providers[0]!, id: 'third' });
    config.models.push(
      { ...base, id: 'test/other', endpoints: [{ ...base.endpoints[0]!, provider: 'second' }] },
      { ...base, id: 'test/both', endpoints: [{ ...base.endpoints[0]!, provider: 'third' }, { ...base.endpoints[0]!, provider: 'up', upstream_model: 'm2' }] },
    );
    const own = await startGateway(config);
    try {
      const slugs = async (key: string) => {
        const res = await fetch(`${own.baseURL}/providers`, { headers: { authorization: `Bearer ${key}` } });
        assert.equal(res.status, 200);
        return ((await res.json()) as Json).data.map((p: Json) => p.slug);
      };
      const create = async (allowed: string[]) => {
        const res = await own.gateway.app.inject({ method: 'POST', url: '/v1/keys', headers: { authorization: `Bearer ${own.adminKey}` }, payload: { name: 'p', allowed_models: allowed } });
        return (res.json() as Json).key as string;
      };
      assert.deepEqual(await slugs(await create(['test/other'])), ['second']);
      assert.deepEqual(await slugs(await create(['test/both'])), ['up', 'third']);
      assert.deepEqual(await slugs(await create([])), ['up', 'second', 'third']);
      assert.deepEqual(await slugs(own.adminKey), ['up', 'second', 'third']);
    } finally {
      await own.close();
    }
  });
});
