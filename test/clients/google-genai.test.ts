/**
 * `@google/genai` (Google's GenAI SDK, the Gemini CLI's client) against the gateway's Gemini API
 * ingress: generateContent, generateContentStream, a function-calling round trip, countTokens
 * and embedContent, to a Gemini upstream (the native lane: the body passes through, thought
 * signatures survive) and to an OpenAI-compatible upstream (translated), both scripted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GoogleGenAI, FunctionCallingConfigMode, type Content } from '@google/genai';
import { fixturesAvailable, loadChunks, loadJson, startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PARAMS = ['temperature', 'top_p', 'top_k', 'max_tokens', 'stop', 'seed', 'tools', 'tool_choice', 'response_format', 'reasoning'];
const chatCompletion = (message: Json, finish: string, usage: Json = { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16 }) => ({
  id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-up', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish }], usage,
});
const chunk = (delta: Json, finish: string | null = null, usage?: Json) =>
  JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) });
const WEATHER = { name: 'get_weather', description: 'Weather of a city', parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('@google/genai against the Gemini API ingress', () => {
  let gemini: Upstream;
  let openai: Upstream;
  let gw: TestGateway;
  let ai: GoogleGenAI;
  let key: string;

  before(async () => {
    gemini = await startUpstream();
    openai = await startUpstream();
    gw = await startGateway({
      providers: [
        { id: 'gem', kind: 'gemini', base_url: new URL(gemini.url).origin, api_key: 'g-upstream-key' },
        { id: 'oa', kind: 'openai', base_url: openai.url, api_key: 'sk-upstream' },
      ],
      models: [
        { id: 'google/gemini-3-pro-preview', aliases: ['gemini-3-pro-preview'], context_length: 100_000, endpoints: [{ provider: 'gem', upstream_model: 'gemini-3-pro-preview', supported_parameters: PARAMS, pricing: { prompt: 1, completion: 2 } }] },
        { id: 'openai/gpt-x', context_length: 100_000, aliases: ['gemini-2.5-pro'], endpoints: [{ provider: 'oa', upstream_model: 'gpt-up', supported_parameters: PARAMS, pricing: { prompt: 1, completion: 2 } }] },
        { id: 'google/gemini-embedding-001', aliases: ['gemini-embedding-001'], context_length: 2048, endpoints: [{ provider: 'gem', upstream_model: 'gemini-embedding-001', embeddings: true, pricing: { prompt: 1, completion: 0 } }] },
        { id: 'openai/embed', context_length: 8192, endpoints: [{ provider: 'oa', upstream_model: 'text-embed', embeddings: true, pricing: { prompt: 1, completion: 0 } }] },
      ],
    });
    key = (await gw.createKey('genai')).secret;
    ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.origin } });
  });
  after(async () => {
    await gw?.close();
    await gemini?.close();
    await openai?.close();
  });

  describe('translated to an OpenAI-compatible upstream', () => {
    it('generateContent: system instruction, config and safety settings become a chat request; the answer is Gemini\'s shape', async () => {
      openai.enqueue({ json: chatCompletion({ content: 'Hello from GPT' }, 'stop', { prompt_tokens: 11, completion_tokens: 5, total_tokens: 16, prompt_tokens_details: { cached_tokens: 3 } }) });
      const res = await ai.models.generateContent({
        model: 'openai/gpt-x',
        contents: 'Say hello',
        config: { systemInstruction: 'Be brief', temperature: 0.3, topP: 0.9, maxOutputTokens: 64, stopSequences: ['END'], safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT' as never, threshold: 'BLOCK_NONE' as never }] },
      });
      assert.equal(res.text, 'Hello from GPT');
      assert.equal(res.candidates?.[0]?.finishReason, 'STOP');
      assert.deepEqual(res.usageMetadata, { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16, cachedContentTokenCount: 3 });
      assert.equal(res.modelVersion, 'openai/gpt-x');
      const sent = openai.requests.at(-1)!;
      assert.equal(sent.path, '/v1/chat/completions');
      const body = sent.json as Json;
      assert.deepEqual(body.messages, [{ role: 'system', content: 'Be brief' }, { role: 'user', content: 'Say hello' }]);
      assert.equal(body.temperature, 0.3);
      assert.equal(body.top_p, 0.9);
      assert.equal(body.max_completion_tokens ?? body.max_tokens, 64);
      assert.deepEqual(body.stop, ['END']);
      const record = await lastGeneration(gw);
      assert.equal(res.responseId, record.id);
      assert.equal(record.api, 'gemini');
      assert.equal(record.served_model, 'openai/gpt-x');
      assert.equal(record.prompt_tokens, 11);
      assert.ok(JSON.stringify(record.detail.warnings).includes('safetySettings left out'), JSON.stringify(record.detail.warnings));
    });

    it('generateContentStream (alt=sse): text chunks, then the finish reason and usage', async () => {
      openai.enqueue({ sse: [chunk({ role: 'assistant', content: 'Hel' }), chunk({ content: 'lo!' }), chunk({}, 'stop'), JSON.stringify({ id: 'c-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-up', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } })] });
      const texts: string[] = [];
      let last: Json | undefined;
      for await (const c of await ai.models.generateContentStream({ model: 'openai/gpt-x', contents: 'hi' })) {
        if (c.text) texts.push(c.text);
        last = c;
      }
      assert.deepEqual(texts, ['Hel', 'lo!']);
      assert.equal(last?.candidates?.[0]?.finishReason, 'STOP');
      assert.deepEqual(last?.usageMetadata, { promptTokenCount: 7, candidatesTokenCount: 2, totalTokenCount: 9 });
      assert.equal(openai.requests.at(-1)!.path, '/v1/chat/completions');
      assert.equal((openai.requests.at(-1)!.json as Json).stream, true);
      const record = await lastGeneration(gw);
      assert.equal(last?.responseId, record.id);
      assert.equal(record.streamed, record.streamed === 1 ? 1 : true);
    });

    it('a function-calling round trip: the call comes back with its id, the function response goes up as a tool message', async () => {
      openai.enqueue({ json: chatCompletion({ content: null, tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] }, 'tool_calls') });
      const config = { tools: [{ functionDeclarations: [WEATHER] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['get_weather'] } } };
      const first = await ai.models.generateContent({ model: 'openai/gpt-x', contents: 'Weather in Paris?', config });
      assert.deepEqual(first.functionCalls, [{ id: 'call_abc', name: 'get_weather', args: { city: 'Paris' } }]);
      assert.equal(first.candidates?.[0]?.finishReason, 'STOP');
      const up1 = openai.requests.at(-1)!.json as Json;
      assert.deepEqual(up1.tools, [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: WEATHER.parametersJsonSchema } }]);
      assert.deepEqual(up1.tool_choice, { type: 'function', function: { name: 'get_weather' } });

      openai.enqueue({ json: chatCompletion({ content: 'It is sunny in Paris.' }, 'stop') });
      const history: Content[] = [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        first.candidates![0]!.content!,
        { role: 'user', parts: [{ functionResponse: { id: 'call_abc', name: 'get_weather', response: { forecast: 'sunny' } } }] },
      ];
      const second = await ai.models.generateContent({ model: 'openai/gpt-x', contents: history, config: { tools: config.tools } });
      assert.equal(second.text, 'It is sunny in Paris.');
      const up2 = openai.requests.at(-1)!.json as Json;
      assert.deepEqual(up2.messages, [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_abc', content: '{"forecast":"sunny"}' },
      ]);
    });

    it('countTokens: the gateway\'s estimate, in Gemini\'s shape', async () => {
      const before = openai.requests.length;
      const res = await ai.models.countTokens({ model: 'openai/gpt-x', contents: 'one two three four' });
      assert.equal(typeof res.totalTokens, 'number');
      assert.ok(res.totalTokens! >= 4 && res.totalTokens! <= 16, String(res.totalTokens));
      assert.equal(openai.requests.length, before, 'no upstream call');
    });

    it('embedContent (sent as batchEmbedContents): the texts go to /embeddings, the vectors come back in order', async () => {
      openai.enqueue({ json: { object: 'list', data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2] }, { object: 'embedding', index: 1, embedding: [0.3, 0.4] }], model: 'text-embed', usage: { prompt_tokens: 4, total_tokens: 4 } } });
      const res = await ai.models.embedContent({ model: 'openai/embed', contents: ['alpha', 'beta'], config: { outputDimensionality: 2 } });
      assert.deepEqual(res.embeddings?.map((e) => e.values), [[0.1, 0.2], [0.3, 0.4]]);
      const sent = openai.requests.at(-1)!;
      assert.equal(sent.path, '/v1/embeddings');
      assert.deepEqual((sent.json as Json).input, ['alpha', 'beta']);
      assert.equal((sent.json as Json).dimensions, 2);
      const record = await lastGeneration(gw);
      assert.equal(record.api, 'gemini-embeddings');
      assert.equal(record.prompt_tokens, 4);
    });

    it('Google\'s built-in tools cannot run there: a 400 naming the tool, in Google\'s envelope', async () => {
      await assert.rejects(ai.models.generateContent({ model: 'openai/gpt-x', contents: 'news?', config: { tools: [{ googleSearch: {} }] } }), (err: Error & { status?: number }) => {
        assert.equal(err.status, 400);
        const body = JSON.parse(err.message.slice(err.message.indexOf('{'))) as Json;
        assert.equal(body.error.status, 'INVALID_ARGUMENT');
        assert.equal(body.error.details[0].reason, 'unsupported_parameter');
        assert.equal(body.error.details[0].metadata.param, 'tools[0].googleSearch');
        return true;
      });
    });
  });

  describe('native to a Gemini upstream', { skip: fixturesAvailable() ? false : 'the recordings folder ../shared/fixtures/recorded is absent' }, () => {
    it('generateContent: the body goes through as sent (thought signatures, safety settings), the answer comes back as Google sent it', async () => {
      const recorded = loadJson('google/google-text.json') as Json;
      gemini.enqueue({ json: recorded });
      const contents: Content[] = [
        { role: 'user', parts: [{ text: 'count the rs' }] },
        { role: 'model', parts: [{ text: 'thinking done', thoughtSignature: 'c2lnLTE=' }] },
        { role: 'user', parts: [{ text: 'in strawberry?' }] },
      ];
      const res = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents, config: { safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT' as never, threshold: 'BLOCK_NONE' as never }], thinkingConfig: { includeThoughts: true, thinkingLevel: 'HIGH' as never } } });
      assert.equal(res.text, recorded.candidates[0].content.parts[0].text);
      assert.equal(res.candidates?.[0]?.content?.parts?.[0]?.thoughtSignature, recorded.candidates[0].content.parts[0].thoughtSignature);
      assert.equal(res.responseId, recorded.responseId);
      const sent = gemini.requests.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-3-pro-preview:generateContent');
      assert.equal(sent.headers['x-goog-api-key'], 'g-upstream-key');
      const body = sent.json as Json;
      assert.deepEqual(body.contents, contents);
      assert.deepEqual(body.safetySettings, [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }]);
      assert.deepEqual(body.generationConfig, { thinkingConfig: { includeThoughts: true, thinkingLevel: 'HIGH' } });
      assert.equal(body.model, undefined);
      const record = await lastGeneration(gw);
      assert.equal(record.api, 'gemini');
      assert.equal(record.prompt_tokens, 9);
      assert.equal(record.completion_tokens, 28 + 244);
    });

    it('generateContentStream: the upstream\'s events are relayed; a function call keeps its thought signature', async () => {
      const lines = loadChunks('google/google-tool-call-gemini3.chunks.txt');
      gemini.enqueue({ sse: lines, framing: 'gemini' });
      const calls: Json[] = [];
      for await (const c of await ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents: 'weather in SF?', config: { tools: [{ functionDeclarations: [WEATHER] }] } })) {
        for (const p of c.candidates?.[0]?.content?.parts ?? []) if (p.functionCall) calls.push({ name: p.functionCall.name, args: p.functionCall.args, signed: typeof p.thoughtSignature === 'string' && p.thoughtSignature.length > 100 });
      }
      assert.deepEqual(calls, [{ name: 'weather', args: { location: 'San Francisco' }, signed: true }]);
      const sent = gemini.requests.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse');
      assert.deepEqual((sent.json as Json).tools, [{ functionDeclarations: [WEATHER] }]);
    });

    it('countTokens: Gemini\'s own count', async () => {
      gemini.enqueue({ json: { totalTokens: 42 } });
      const res = await ai.models.countTokens({ model: 'gemini-3-pro-preview', contents: 'how many?' });
      assert.equal(res.totalTokens, 42);
      const sent = gemini.requests.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-3-pro-preview:countTokens');
      assert.deepEqual((sent.json as Json).generateContentRequest.contents, [{ role: 'user', parts: [{ text: 'how many?' }] }]);
      assert.equal((sent.json as Json).generateContentRequest.model, 'models/gemini-3-pro-preview');
    });

    it('embedContent: batchEmbedContents upstream', async () => {
      gemini.enqueue({ json: { embeddings: [{ values: [1, 2, 3] }] } });
      const res = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: 'vector me' });
      assert.deepEqual(res.embeddings?.map((e) => e.values), [[1, 2, 3]]);
      const sent = gemini.requests.at(-1)!;
      assert.equal(sent.path, '/v1beta/models/gemini-embedding-001:batchEmbedContents');
      assert.deepEqual((sent.json as Json).requests, [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'vector me' }] } }]);
    });
  });
});
