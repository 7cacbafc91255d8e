/**
 * `GET /v1/models/{author}/{slug}/endpoints`: `supports_implicit_caching` comes from the kind's
 * config schema (`explicitPromptCaching`), not from a test of the kind's name.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;

before(async () => {
  gw = await startGateway({
    providers: [
      { id: 'oa', kind: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k' },
      { id: 'an', kind: 'anthropic', base_url: 'http://127.0.0.1:9', api_key: 'k' },
    ],
    models: [{
      id: 'test/model',
      context_length: 8192,
      endpoints: [
        { provider: 'oa', upstream_model: 'a', pricing: { prompt: 1, completion: 2, cache_read: 0.5 } },
        { provider: 'an', upstream_model: 'b', pricing: { prompt: 1, completion: 2, cache_read: 0.1 } },
        { provider: 'oa', upstream_model: 'c', pricing: { prompt: 1, completion: 2 } },
      ],
    }],
  });
});
after(async () => {
  await gw?.close();
});

test('implicit caching: priced cache reads on an openai endpoint, never on an anthropic one', async () => {
  const res = await fetch(`${gw.baseURL}/models/test/model/endpoints`, { headers: { authorization: `Bearer ${gw.adminKey}` } });
  assert.equal(res.status, 200);
  const body = (await res.json()) as { data: { endpoints: { provider_name: string; upstream_model: string; supports_implicit_caching: boolean }[] } };
  assert.deepEqual(
    body.data.endpoints.map((e) => [e.provider_name, e.upstream_model, e.supports_implicit_caching]),
    [['oa', 'a', true], ['an', 'b', false], ['oa', 'c', false]],
  );
});
