/**
 * The Gemini API ingress over plain HTTP, the paths the GenAI SDK test does not take: the `/v1`
 * and unversioned routes, `streamGenerateContent` without `alt=sse` (the streamed JSON array,
 * checked byte for byte), `GET models` and `models/{model}` in Google's shapes, `?key=` auth
 * (never in the request log line, a record or an upstream request), Google's built-in tools on
 * non-Gemini targets and `candidateCount` > 1. Scripted `openai`- and `gemini`-kind upstreams.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, beforeEach, describe, it } from 'node:test';
import { GoogleGenAI } from '@google/genai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { testLogFile } from '../helpers/test-output.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PARAMS = ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'tools', 'tool_choice', 'response_format', 'reasoning'];
const completion = (content: string, usage = { prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 }) => ({
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }], usage,
});
const chunk = (delta: Json, finish: string | null = null, usage?: Json) =>
  JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) });
const gEvent = (parts: Json[], extra: Json = {}, usageMetadata?: Json) =>
  JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], ...(usageMetadata ? { usageMetadata } : {}), modelVersion: 'gemini-x-001', responseId: 'up-resp-1' });
const HELLO = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

describe('Gemini API ingress over HTTP', () => {
  let openai: Upstream;
  let gemini: Upstream;
  let gw: TestGateway;
  let key: string;

  const post = (path: string, body: unknown, headers: Record<string, string> = { 'x-goog-api-key': key }) =>
    fetch(gw.origin + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const get = (path: string, headers: Record<string, string> = { 'x-goog-api-key': key }) => fetch(gw.origin + path, { headers });

  before(async () => {
    openai = await startUpstream();
    gemini = await startUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [
        { id: 'oa', kind: 'openai', base_url: openai.url, api_key: 'sk-upstream' },
        { id: 'gem', kind: 'gemini', base_url: new URL(gemini.url).origin, api_key: 'g-upstream-key' },
      ],
      models: [
        { id: 'test/chat', name: 'Test chat', context_length: 100_000, aliases: ['gemini-2.5-pro'], endpoints: [{ provider: 'oa', upstream_model: 'gpt-up', max_completion_tokens: 4096, supported_parameters: PARAMS, pricing: { prompt: 1, completion: 2 } }] },
        { id: 'google/gemini-x', context_length: 1_000_000, endpoints: [{ provider: 'gem', upstream_model: 'gemini-x', max_completion_tokens: 8192, supported_parameters: PARAMS, pricing: { prompt: 1, completion: 2 } }] },
        {
          id: 'test/mixed',
          context_length: 100_000,
          endpoints: [
            { provider: 'oa', upstream_model: 'gpt-up', supported_parameters: PARAMS },
            { provider: 'gem', upstream_model: 'gemini-x', supported_parameters: PARAMS },
          ],
        },
        { id: 'test/embed', context_length: 8192, endpoints: [{ provider: 'oa', upstream_model: 'text-embed', embeddings: true, pricing: { prompt: 1, completion: 0 } }] },
      ],
    });
    key = (await gw.createKey('gemini-http')).secret;
  });
  beforeEach(() => {
    openai.setDefault(undefined);
    gemini.setDefault(undefined);
  });
  after(async () => {
    await gw?.close();
    await openai?.close();
    await gemini?.close();
  });

  describe('the /v1 and unversioned paths', () => {
    for (const prefix of ['/v1', '']) {
      it(`${prefix || '(none)'}/models/{model}:generateContent, :streamGenerateContent?alt=sse, :countTokens, :embedContent, :batchEmbedContents`, async () => {
        openai.enqueue({ json: completion('v1 hello') });
        const res = await post(`${prefix}/models/test/chat:generateContent`, HELLO);
        assert.equal(res.status, 200);
        const body = (await res.json()) as Json;
        assert.deepEqual(body.candidates, [{ content: { role: 'model', parts: [{ text: 'v1 hello' }] }, finishReason: 'STOP', index: 0 }]);
        assert.equal(body.modelVersion, 'test/chat');
        assert.equal(body.responseId, (await lastGeneration(gw)).id);
        assert.equal(openai.requests.at(-1)!.path, '/v1/chat/completions');

        openai.enqueue({ sse: [chunk({ role: 'assistant', content: 'a' }), chunk({ content: 'b' }, 'stop'), chunk({}, null, { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 })] });
        const sse = await post(`${prefix}/models/test/chat:streamGenerateContent?alt=sse`, HELLO);
        assert.equal(sse.status, 200);
        assert.match(sse.headers.get('content-type') ?? '', /^text\/event-stream/);
        const text = await sse.text();
        const events = text.split('\r\n\r\n').filter((e) => e !== '').map((e) => { assert.ok(e.startsWith('data: '), e); return JSON.parse(e.slice(6)) as Json; });
        assert.deepEqual(events.map((e) => e.candidates[0].content.parts.map((p: Json) => p.text).join('')), ['a', 'b', '']);
        assert.equal(events.at(-1)!.candidates[0].finishReason, 'STOP');
        assert.deepEqual(events.at(-1)!.usageMetadata, { promptTokenCount: 2, candidatesTokenCount: 2, totalTokenCount: 4 });

        const count = await post(`${prefix}/models/gemini-2.5-pro:countTokens`, { contents: [{ parts: [{ text: 'one two three' }] }] });
        assert.equal(count.status, 200);
        const counted = (await count.json()) as Json;
        assert.deepEqual(Object.keys(counted), ['totalTokens']);
        assert.ok(counted.totalTokens >= 3 && counted.totalTokens <= 12, String(counted.totalTokens));

        openai.enqueue({ json: { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.25] }], model: 'text-embed', usage: { prompt_tokens: 2, total_tokens: 2 } } });
        const one = await post(`${prefix}/models/test/embed:embedContent`, { content: { parts: [{ text: 'vec' }] } });
        assert.equal(one.status, 200);
        assert.deepEqual(await one.json(), { embedding: { values: [0.5, 0.25] } });
        assert.deepEqual((openai.requests.at(-1)!.json as Json).input, ['vec']);

        openai.enqueue({ json: { object: 'list', data: [{ object: 'embedding', index: 1, embedding: [2] }, { object: 'embedding', index: 0, embedding: [1] }], model: 'text-embed', usage: { prompt_tokens: 2, total_tokens: 2 } } });
        const batch = await post(`${prefix}/models/test/embed:batchEmbedContents`, { requests: [{ model: 'models/test/embed', content: { parts: [{ text: 'x' }] } }, { model: 'models/test/embed', content: { parts: [{ text: 'y' }] } }] });
        assert.equal(batch.status, 200);
        assert.deepEqual(await batch.json(), { embeddings: [{ values: [1] }, { values: [2] }] });
      });
    }

    it('/v1/models/{model}:generateContent to a gemini endpoint goes up natively on Gemini\'s /v1beta path', async () => {
      gemini.enqueue({ json: { candidates: [{ content: { role: 'model', parts: [{ text: 'native' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 }, modelVersion: 'gemini-x-001', responseId: 'up-1' } });
      const res = await post('/v1/models/google/gemini-x:generateContent', HELLO);
      assert.equal(res.status, 200);
      const body = (await res.json()) as Json;
      assert.equal(body.candidates[0].content.parts[0].text, 'native');
      assert.equal(gemini.requests.at(-1)!.path, '/v1beta/models/gemini-x:generateContent');
      assert.deepEqual((gemini.requests.at(-1)!.json as Json).contents, HELLO.contents);
    });
  });

  describe('streamGenerateContent without alt=sse: one JSON array, streamed', () => {
    /** The body after the keep-alive whitespace, split as `[` e (`,\r\n` e)* `]`, each element parsed. */
    function jsonArrayElements(raw: string): Json[] {
      const body = raw.replace(/^[ \t\r\n]*/, '');
      assert.ok(body.startsWith('['), JSON.stringify(raw.slice(0, 40)));
      assert.ok(body.endsWith(']'), JSON.stringify(raw.slice(-40)));
      const elements = body.slice(1, -1).split(',\r\n').map((e) => JSON.parse(e) as Json);
      // The framing is exactly that: re-encoding the elements gives the same bytes, and the whole is one JSON array.
      assert.equal(body, `[${elements.map((e) => JSON.stringify(e)).join(',\r\n')}]`);
      assert.deepEqual(JSON.parse(body), elements);
      return elements;
    }

    it('translated: each chunk an element, the last with finishReason and usageMetadata; application/json', async () => {
      openai.enqueue({ sse: [chunk({ role: 'assistant', content: 'Hel' }), chunk({ content: 'lo' }), chunk({}, 'stop'), chunk({}, null, { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 })] });
      const res = await post('/v1beta/models/test/chat:streamGenerateContent', HELLO);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      const elements = jsonArrayElements(await res.text());
      const id = (await lastGeneration(gw)).id;
      assert.deepEqual(elements, [
        { candidates: [{ content: { role: 'model', parts: [{ text: 'Hel' }] }, index: 0 }], modelVersion: 'test/chat', responseId: id },
        { candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, index: 0 }], modelVersion: 'test/chat', responseId: id },
        { candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 }, modelVersion: 'test/chat', responseId: id },
      ]);
      assert.equal((openai.requests.at(-1)!.json as Json).stream, true);
    });

    it('native: the upstream is asked for alt=sse, its events written as the array\'s elements', async () => {
      const first = gEvent([{ text: 'Native ' }]);
      const last = gEvent([{ text: 'array.', thoughtSignature: 'c2ln' }], { finishReason: 'STOP' }, { promptTokenCount: 4, candidatesTokenCount: 3, totalTokenCount: 7 });
      gemini.enqueue({ framing: 'gemini', sse: [first, last] });
      const res = await post('/v1beta/models/google/gemini-x:streamGenerateContent', HELLO);
      assert.equal(res.status, 200);
      const elements = jsonArrayElements(await res.text());
      assert.equal(gemini.requests.at(-1)!.path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
      assert.deepEqual(elements.map((e) => e.candidates[0].content.parts), [[{ text: 'Native ' }], [{ text: 'array.', thoughtSignature: 'c2ln' }]]);
      assert.equal(elements[1]!.candidates[0].finishReason, 'STOP');
      assert.deepEqual(elements[1]!.usageMetadata, { promptTokenCount: 4, candidatesTokenCount: 3, totalTokenCount: 7 });
      const record = await lastGeneration(gw);
      assert.equal(record.prompt_tokens, 4);
      assert.equal(record.completion_tokens, 3);
    });

    it('a failure after the first element is an error element in Google\'s envelope, and the array is closed', async () => {
      const ok = `data: ${chunk({ role: 'assistant', content: 'part' })}\n\n`;
      openai.enqueue({ rawChunks: [ok, 'data: {"id":"c-1","object":"chat.completion.chunk","cho'], destroyAfterBytes: ok.length + 20 });
      const res = await post('/v1beta/models/test/chat:streamGenerateContent', HELLO);
      assert.equal(res.status, 200);
      const elements = jsonArrayElements(await res.text());
      assert.equal(elements.length, 2);
      assert.deepEqual(elements[0]!.candidates[0].content.parts, [{ text: 'part' }]);
      const err = elements[1]!.error as Json;
      assert.equal(err.code, 502);
      assert.equal(err.status, 'INTERNAL');
      assert.equal(err.details[0]['@type'], 'type.googleapis.com/google.rpc.ErrorInfo');
      assert.equal(err.details[0].domain, 'opinference');
      assert.equal(typeof err.details[0].reason, 'string');
    });

    it('native: an upstream cut after its first event ends the array with an error element', async () => {
      const first = `data: ${gEvent([{ text: 'half' }])}\r\n\r\n`;
      gemini.enqueue({ rawChunks: [first, 'data: {"candidates":[{"content":'], destroyAfterBytes: first.length + 10 });
      const res = await post('/v1beta/models/google/gemini-x:streamGenerateContent', HELLO);
      assert.equal(res.status, 200);
      const elements = jsonArrayElements(await res.text());
      assert.deepEqual(elements.map((e) => Object.keys(e)), [['candidates', 'modelVersion', 'responseId'], ['error']]);
      assert.equal(elements[0]!.responseId, 'up-resp-1');
      assert.equal(elements[1]!.error.status, 'INTERNAL');
      assert.equal(elements[1]!.error.details[0].domain, 'opinference');
    });

    it('native with the response cache: the live answer relayed, a hit replayed as a well-formed array of the same answer', async () => {
      const body = { ...HELLO, contents: [{ role: 'user', parts: [{ text: 'cache me' }] }], op: { cache: true } };
      gemini.setDefault({ framing: 'gemini', sse: [gEvent([{ text: 'Cached ' }]), gEvent([{ text: 'answer.' }], { finishReason: 'STOP' }, { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 })] });
      const live = await post('/v1beta/models/google/gemini-x:streamGenerateContent', body);
      assert.equal(live.headers.get('x-op-cache'), 'MISS');
      assert.deepEqual(jsonArrayElements(await live.text()).map((e) => e.responseId), ['up-resp-1', 'up-resp-1']);
      let hit: Response | undefined;
      // The entry is stored after the response: ask until it is there.
      for (let i = 0; i < 40 && !hit; i++) {
        const res = await post('/v1beta/models/google/gemini-x:streamGenerateContent', body);
        if (res.headers.get('x-op-cache') === 'HIT') hit = res;
        else await res.text();
        if (!hit) await new Promise((r) => setTimeout(r, 25));
      }
      assert.ok(hit, 'no cache hit');
      const elements = jsonArrayElements(await hit.text());
      assert.equal(elements.map((e) => (e.candidates[0].content.parts as Json[]).map((p) => p.text).join('')).join(''), 'Cached answer.');
      assert.equal(elements.at(-1)!.candidates[0].finishReason, 'STOP');
    });
  });

  describe('GET models and models/{model}', () => {
    it('the list in Google\'s shape on /v1beta, unversioned and /v1 (with a Google key header), each alias its own entry; paged', async () => {
      const expected = {
        name: 'models/test/chat', baseModelId: 'test/chat', version: '001', displayName: 'Test chat', description: '', inputTokenLimit: 100_000, outputTokenLimit: 4096,
        supportedGenerationMethods: ['generateContent', 'streamGenerateContent', 'countTokens'],
      };
      for (const path of ['/v1beta/models', '/models', '/v1/models']) {
        const res = await get(path);
        assert.equal(res.status, 200, path);
        const body = (await res.json()) as Json;
        assert.deepEqual(body.models.map((m: Json) => m.name), ['models/test/chat', 'models/google/gemini-x', 'models/test/mixed', 'models/test/embed', 'models/gemini-2.5-pro'], path);
        assert.deepEqual(body.models[0], expected, path);
        assert.deepEqual(body.models[3].supportedGenerationMethods, ['embedContent', 'batchEmbedContents']);
        assert.equal(body.nextPageToken, undefined);
      }
      const page1 = (await (await get('/v1beta/models?pageSize=2')).json()) as Json;
      assert.deepEqual(page1.models.map((m: Json) => m.name), ['models/test/chat', 'models/google/gemini-x']);
      assert.equal(page1.nextPageToken, '2');
      const page3 = (await (await get(`/v1beta/models?pageSize=2&pageToken=${page1.nextPageToken as string}`)).json()) as Json;
      assert.deepEqual(page3.models.map((m: Json) => m.name), ['models/test/mixed', 'models/test/embed']);
      const bad = await get('/v1beta/models?pageSize=0');
      assert.equal(bad.status, 400);
      const badBody = (await bad.json()) as Json;
      assert.equal(badBody.error.status, 'INVALID_ARGUMENT');
      assert.equal(badBody.error.details[0].metadata.param, 'pageSize');
    });

    it('one model by id, by alias (under the asked name) and with a models/ prefix; an unknown one is a 404 NOT_FOUND', async () => {
      const byId = (await (await get('/v1beta/models/test/chat')).json()) as Json;
      assert.equal(byId.name, 'models/test/chat');
      assert.equal(byId.outputTokenLimit, 4096);
      const byAlias = (await (await get('/v1beta/models/gemini-2.5-pro')).json()) as Json;
      assert.equal(byAlias.name, 'models/gemini-2.5-pro');
      assert.equal(byAlias.baseModelId, 'test/chat');
      const prefixed = (await (await get('/v1beta/models/models/google/gemini-x')).json()) as Json;
      assert.equal(prefixed.name, 'models/google/gemini-x');
      assert.equal(prefixed.inputTokenLimit, 1_000_000);
      const missing = await get('/v1beta/models/nope');
      assert.equal(missing.status, 404);
      const body = (await missing.json()) as Json;
      assert.equal(body.error.code, 404);
      assert.equal(body.error.status, 'NOT_FOUND');
      assert.equal(body.error.details[0].reason, 'not_found');
      assert.equal(body.error.details[0].metadata.param, 'model');
    });

    it('@google/genai models.get and models.list, on v1beta and on v1', async () => {
      for (const apiVersion of ['v1beta', 'v1']) {
        const ai = new GoogleGenAI({ apiKey: key, apiVersion, httpOptions: { baseUrl: gw.origin } });
        const model = await ai.models.get({ model: 'gemini-2.5-pro' });
        assert.equal(model.name, 'models/gemini-2.5-pro', apiVersion);
        assert.equal(model.displayName, 'Test chat', apiVersion);
        assert.equal(model.inputTokenLimit, 100_000, apiVersion);
        const names: string[] = [];
        for await (const m of await ai.models.list({ config: { pageSize: 2 } })) names.push(m.name!);
        assert.deepEqual(names, ['models/test/chat', 'models/google/gemini-x', 'models/test/mixed', 'models/test/embed', 'models/gemini-2.5-pro'], apiVersion);
      }
    });
  });

  describe('?key= auth', () => {
    it('works on generateContent, streams, countTokens and GET models, and the key is never in the log, a record or an upstream request', async () => {
      const logFile = testLogFile('gateway');
      const logStart = readFileSync(logFile, 'utf8').length;
      const { secret, id } = await gw.createKey('query-key');
      const wrong = 'op-not-a-key-0123456789abcdef';
      openai.enqueue({ json: completion('via query') });
      const r1 = await post(`/v1beta/models/test/chat:generateContent?key=${secret}`, HELLO, {});
      assert.equal(r1.status, 200);
      gemini.enqueue({ framing: 'gemini', sse: [gEvent([{ text: 'q' }], { finishReason: 'STOP' }, { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 })] });
      const r2 = await post(`/v1beta/models/google/gemini-x:streamGenerateContent?alt=sse&key=${secret}`, HELLO, {});
      assert.equal(r2.status, 200);
      await r2.text();
      const r3 = await post(`/v1/models/test/chat:countTokens?key=${secret}`, HELLO, {});
      assert.equal(r3.status, 200);
      const r4 = await get(`/v1beta/models?key=${secret}`, {});
      assert.equal(r4.status, 200);
      const r5 = await post(`/v1beta/models/test/chat:generateContent?key=${wrong}`, HELLO, {});
      assert.equal(r5.status, 401);
      const denied = (await r5.json()) as Json;
      assert.equal(denied.error.status, 'UNAUTHENTICATED');
      assert.equal(denied.error.details[0].reason, 'invalid_api_key');

      // The native upstream got the gateway's path (no query key) and its own key.
      const up = gemini.requests.at(-1)!;
      assert.equal(up.path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
      assert.equal(up.headers['x-goog-api-key'], 'g-upstream-key');
      for (const r of [...openai.requests, ...gemini.requests]) assert.ok(!JSON.stringify(r).includes(secret), r.path);

      const log = readFileSync(logFile, 'utf8').slice(logStart);
      assert.ok(!log.includes(secret), 'the key is in the log');
      assert.ok(!log.includes(wrong), 'the wrong key is in the log');
      const urls = log.split('\n').filter((l) => l.includes('"msg":"request"')).map((l) => (JSON.parse(l) as Json).url as string);
      assert.deepEqual(urls, [
        '/v1beta/models/test/chat:generateContent?key=REDACTED',
        '/v1beta/models/google/gemini-x:streamGenerateContent?alt=sse&key=REDACTED',
        '/v1/models/test/chat:countTokens?key=REDACTED',
        '/v1beta/models?key=REDACTED',
        '/v1beta/models/test/chat:generateContent?key=REDACTED',
      ]);

      await gw.flush();
      const rows = await gw.store.db.selectFrom('generations').selectAll().where('key_id', '=', id).execute();
      assert.equal(rows.length, 2);
      assert.ok(!JSON.stringify(rows).includes(secret), 'the key is in a generation record');
    });

    it('Bearer, and an empty x-goog-api-key beside a Bearer (the Gemini CLI\'s gateway mode), are accepted', async () => {
      openai.setDefault({ json: completion('bearer') });
      const r1 = await post('/v1beta/models/test/chat:generateContent', HELLO, { authorization: `Bearer ${key}` });
      assert.equal(r1.status, 200);
      const r2 = await post('/v1beta/models/test/chat:generateContent', HELLO, { 'x-goog-api-key': '', authorization: `Bearer ${key}` });
      assert.equal(r2.status, 200);
      const r3 = await post('/v1beta/models/test/chat:generateContent', HELLO, { 'x-goog-api-key': '' });
      assert.equal(r3.status, 401);
      assert.equal(((await r3.json()) as Json).error.details[0].reason, 'missing_api_key');
    });
  });

  describe('Google\'s built-in tools', () => {
    for (const [tool, index] of [['googleSearch', 0], ['codeExecution', 1], ['urlContext', 1]] as const) {
      it(`${tool} on a model with no gemini endpoint: a 400 naming tools[${index}].${tool}, nothing sent upstream`, async () => {
        const before = openai.requests.length;
        const tools = index === 0 ? [{ [tool]: {} }] : [{ functionDeclarations: [{ name: 'f', parameters: { type: 'OBJECT', properties: {} } }] }, { [tool]: {} }];
        const res = await post('/v1beta/models/test/chat:generateContent', { ...HELLO, tools });
        assert.equal(res.status, 400);
        const body = (await res.json()) as Json;
        assert.equal(body.error.code, 400);
        assert.equal(body.error.status, 'INVALID_ARGUMENT');
        assert.equal(body.error.details[0].reason, 'unsupported_parameter');
        assert.equal(body.error.details[0].metadata.param, `tools[${index}].${tool}`);
        assert.match(body.error.message, /run only on gemini endpoints/);
        assert.equal(openai.requests.length, before);
      });
    }

    it('on a model with an openai and a gemini endpoint: served by the gemini one, the tool sent on', async () => {
      const before = openai.requests.length;
      gemini.enqueue({ json: { candidates: [{ content: { role: 'model', parts: [{ text: 'searched' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 } } });
      const res = await post('/v1beta/models/test/mixed:generateContent', { ...HELLO, tools: [{ googleSearch: {} }, { codeExecution: {} }] });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as Json).candidates[0].content.parts[0].text, 'searched');
      assert.equal(openai.requests.length, before);
      assert.deepEqual((gemini.requests.at(-1)!.json as Json).tools, [{ googleSearch: {} }, { codeExecution: {} }]);
      const record = await lastGeneration(gw);
      assert.equal(record.provider, 'gem');
    });
  });

  describe('malformed contents', () => {
    it('empty parts everywhere and an unknown role are 400s naming the field; nothing goes upstream', async () => {
      const before = openai.requests.length;
      const empty = await post('/v1beta/models/test/chat:generateContent', { contents: [{ role: 'user', parts: [] }] });
      assert.equal(empty.status, 400);
      assert.equal(((await empty.json()) as Json).error.details[0].metadata.param, 'contents');
      const robot = await post('/v1beta/models/test/chat:generateContent', { contents: [{ role: 'robot', parts: [{ text: 'hi' }] }] });
      assert.equal(robot.status, 400);
      assert.equal(((await robot.json()) as Json).error.details[0].metadata.param, 'contents[0].role');
      assert.equal(openai.requests.length, before);
    });
  });

  describe('candidateCount', () => {
    it('> 1 is a 400 naming generationConfig.candidateCount; 1 is served', async () => {
      const before = openai.requests.length;
      for (const [path, n] of [['/v1beta/models/test/chat:generateContent', 2], ['/v1beta/models/google/gemini-x:streamGenerateContent?alt=sse', 3]] as const) {
        const res = await post(path, { ...HELLO, generationConfig: { candidateCount: n } });
        assert.equal(res.status, 400, path);
        const body = (await res.json()) as Json;
        assert.equal(body.error.status, 'INVALID_ARGUMENT');
        assert.equal(body.error.details[0].reason, 'invalid_request');
        assert.equal(body.error.details[0].metadata.param, 'generationConfig.candidateCount');
        assert.match(body.error.message, /only 1 candidate/);
      }
      assert.equal(openai.requests.length, before);
      openai.enqueue({ json: completion('one') });
      const ok = await post('/v1beta/models/test/chat:generateContent', { ...HELLO, generationConfig: { candidateCount: 1 } });
      assert.equal(ok.status, 200);
    });
  });
});
