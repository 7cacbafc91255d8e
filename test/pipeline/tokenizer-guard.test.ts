/** Token estimates stay linear: a long run without word breaks must not freeze the gateway. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer';
import { estimateTextTokens } from '../../src/accounting/estimate-tokens.js';
import { startUpstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway } from '../helpers/gateway.js';

test('slice-wise counting equals the whole-text count on prose and is linear on runs', () => {
  const prose = 'The gateway routes each request to a provider and records its usage. '.repeat(400);
  assert.equal(estimateTextTokens(prose), countTokens(prose));
  assert.equal(estimateTextTokens('中'.repeat(50_000)), 50_000);
  assert.equal(estimateTextTokens('a'.repeat(150_000)), 18_750);
});

test('a 150 KB run of one character is refused on context while the gateway keeps answering', async () => {
  const upstream = await startUpstream();
  const gw = await startGateway(oneModelConfig(upstream.url));
  try {
    const big = fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/model', messages: [{ role: 'user', content: 'a'.repeat(150_000) }] }),
    });
    const health = await fetch(`${gw.origin}/health`);
    assert.equal(health.status, 200);
    const res = await big;
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'context_length_exceeded');
    assert.match(body.error.message, /about 18756 prompt tokens \+ 0 output tokens exceed its context length 8192/);
    assert.equal(upstream.requests.length, 0);
  } finally {
    await gw.close();
    await upstream.close();
  }
});
