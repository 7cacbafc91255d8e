/**
 * `data: [DONE]` ends an OpenAI-compatible stream: whatever the upstream sends after it (a
 * generation that starts over) is never relayed or stitched onto the answer, and a stream whose
 * chunk `id` changes mid-stream is flagged in the record's `detail.warnings`.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { oneModelConfig, startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let upstream: Upstream;
let gw: TestGateway;

before(async () => {
  upstream = await startUpstream();
  gw = await startGateway(oneModelConfig(upstream.url));
});
after(async () => {
  await gw?.close();
  await upstream?.close();
});

const chunk = (id: string, delta: Json, finish: string | null = null) => `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

async function stream(): Promise<{ text: string; finish: string | null; generationId: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'test/model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  assert.equal(res.status, 200);
  const generationId = res.headers.get('x-op-generation-id')!;
  let text = '';
  let finish: string | null = null;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const c = JSON.parse(line.slice(6)) as Json;
    text += c.choices?.[0]?.delta?.content ?? '';
    finish = c.choices?.[0]?.finish_reason ?? finish;
  }
  return { text, finish, generationId };
}

async function warningsOf(id: string): Promise<string[]> {
  await gw.flush();
  const row = await gw.store.db.selectFrom('generations').select('detail').where('id', '=', id).executeTakeFirstOrThrow();
  return (JSON.parse(row.detail) as { warnings: string[] }).warnings;
}

test('content after data: [DONE] is not relayed (a restarted generation is not stitched on)', async () => {
  upstream.enqueue({
    rawChunks: [
      chunk('gen-a', { role: 'assistant', content: 'Hello' }),
      chunk('gen-a', {}, 'stop'),
      'data: [DONE]\n\n',
      chunk('gen-b', { role: 'assistant', content: ' RESTARTED' }),
      chunk('gen-b', {}, 'length'),
      'data: [DONE]\n\n',
    ],
  });
  const r = await stream();
  assert.equal(r.text, 'Hello');
  assert.equal(r.finish, 'stop');
  assert.deepEqual(await warningsOf(r.generationId), []);
});

test('a chunk id that changes mid-stream is flagged in the record', async () => {
  upstream.enqueue({ rawChunks: [chunk('gen-a', { role: 'assistant', content: 'Hel' }), chunk('gen-b', { content: 'lo' }), chunk('gen-b', {}, 'stop'), 'data: [DONE]\n\n'] });
  const r = await stream();
  assert.equal(r.text, 'Hello');
  assert.deepEqual(await warningsOf(r.generationId), ['the upstream stream changed its id mid-stream ("gen-a" → "gen-b"): the output may join two generations']);
});
