/**
 * The Gemini API's native lane to Gemini on Vertex AI (provider kind `vertex`, publisher
 * `google`), offline against the fake Vertex of test/helpers/vertex-fake.ts (its STS issues the
 * bearer of an `external_account` key file; it refuses what Vertex refuses: contents without a
 * role, `id` in function calls and responses). `@google/genai` and plain HTTP on the gateway:
 * the client's body goes to `:generateContent` / `:streamGenerateContent?alt=sse` as sent (thought
 * signatures, safety settings, built-in tools), function ids left out with a warning, and the
 * answer comes back as Vertex sent it, streamed as SSE or as the JSON array.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GoogleGenAI, type Content } from '@google/genai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { lastGeneration } from '../helpers/generation-record.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { GEMINI_TEXT, startVertexFake, type VertexFake } from '../helpers/vertex-fake.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SUPPORTED = ['temperature', 'max_tokens', 'max_completion_tokens', 'tools', 'tool_choice', 'reasoning'];
const MODEL_PATH = '/v1/projects/proj-1/locations/global/publishers/google/models/gemini-3-pro-preview';
const READ = { name: 'read_file', description: 'Read a file', parametersJsonSchema: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] } };
const vEvent = (parts: Json[], extra: Json = {}, usageMetadata?: Json) =>
  JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], ...(usageMetadata ? { usageMetadata } : {}), modelVersion: 'gemini-3-pro-preview', createTime: '2026-12-03T10:00:00.000000Z', responseId: 'vx-resp-7' });

describe('Gemini API → Gemini on Vertex AI (native lane)', () => {
  let fake: VertexFake;
  let openai: Upstream;
  let gw: TestGateway;
  let key: string;
  let ai: GoogleGenAI;

  before(async () => {
    fake = await startVertexFake();
    openai = await startUpstream();
    gw = await startGateway({
      providers: [
        { id: 'vx', kind: 'vertex', base_url: fake.origin, vertex: { project: 'proj-1', key_file: fake.externalAccountFile() } },
        { id: 'oa', kind: 'openai', base_url: openai.url, api_key: 'sk-up' },
      ],
      models: [
        { id: 'google/gemini-3-pro-preview', aliases: ['gemini-3-pro-preview'], context_length: 1_000_000, endpoints: [{ provider: 'vx', upstream_model: 'gemini-3-pro-preview', max_completion_tokens: 65536, supported_parameters: SUPPORTED, pricing: { prompt: 2, completion: 12 } }] },
        {
          id: 'test/openai-then-vertex',
          context_length: 100_000,
          endpoints: [
            { provider: 'oa', upstream_model: 'gpt-up', supported_parameters: SUPPORTED },
            { provider: 'vx', upstream_model: 'gemini-3-pro-preview', supported_parameters: SUPPORTED },
          ],
        },
      ],
    });
    key = (await gw.createKey('vertex-native')).secret;
    ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: gw.origin } });
  });
  after(async () => {
    await gw?.close();
    await fake?.close();
    await openai?.close();
  });

  it('generateContent: the body goes through as sent (signature, safety settings, thinking config); Vertex\'s answer comes back as sent', async () => {
    const answer = { ...GEMINI_TEXT, candidates: [{ content: { role: 'model', parts: [{ text: 'Three.', thoughtSignature: 'dngtc2lnLTE=' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 2, thoughtsTokenCount: 40, totalTokenCount: 54, trafficType: 'ON_DEMAND' }, modelVersion: 'gemini-3-pro-preview', responseId: 'vx-resp-1' };
    fake.reply({ json: answer });
    const contents: Content[] = [
      { role: 'user', parts: [{ text: 'count the rs' }] },
      { role: 'model', parts: [{ text: 'let me think', thoughtSignature: 'c2lnLXByZXY=' }] },
      { role: 'user', parts: [{ text: 'in strawberry?' }] },
    ];
    const res = await ai.models.generateContent({
      model: 'gemini-3-pro-preview',
      contents,
      config: { safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT' as never, threshold: 'BLOCK_NONE' as never }], thinkingConfig: { includeThoughts: true, thinkingLevel: 'HIGH' as never } },
    });
    assert.equal(res.text, 'Three.');
    assert.equal(res.candidates?.[0]?.content?.parts?.[0]?.thoughtSignature, 'dngtc2lnLTE=');
    assert.equal(res.responseId, 'vx-resp-1');
    assert.equal(res.usageMetadata?.thoughtsTokenCount, 40);
    const call = fake.calls.at(-1)!;
    assert.equal(call.path, `${MODEL_PATH}:generateContent`);
    assert.match(String(call.headers.authorization), /^Bearer ya29\.fake-\d+$/);
    assert.equal(call.headers['x-goog-api-key'], undefined);
    assert.deepEqual(call.body, {
      contents,
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      generationConfig: { thinkingConfig: { includeThoughts: true, thinkingLevel: 'HIGH' } },
    });
    const record = await lastGeneration(gw);
    assert.equal(record.api, 'gemini');
    assert.equal(record.provider, 'vx');
    assert.equal(record.prompt_tokens, 12);
    assert.equal(record.completion_tokens, 2 + 40);
    assert.deepEqual(record.detail.warnings, []);
  });

  it('a streamed function-call round trip: the call\'s signature comes back unchanged, the ids are left out (Vertex refuses them) with a warning', async () => {
    const signature = 'c2lnbmVkLWNhbGwtb24tdmVydGV4';
    fake.reply({ framing: 'gemini', sse: [vEvent([{ functionCall: { name: 'read_file', args: { file_path: 'a.txt' } }, thoughtSignature: signature }], { finishReason: 'STOP' }, { promptTokenCount: 30, candidatesTokenCount: 8, totalTokenCount: 38 })] });
    const config = { tools: [{ functionDeclarations: [READ] }] };
    const calls: Json[] = [];
    let model: Content | undefined;
    for await (const c of await ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents: 'read a.txt', config })) {
      model = c.candidates?.[0]?.content;
      for (const p of model?.parts ?? []) if (p.functionCall) calls.push({ call: p.functionCall, signature: p.thoughtSignature });
    }
    assert.deepEqual(calls, [{ call: { name: 'read_file', args: { file_path: 'a.txt' } }, signature }]);
    assert.equal(fake.calls.at(-1)!.path, `${MODEL_PATH}:streamGenerateContent`);
    assert.equal(fake.calls.at(-1)!.query.get('alt'), 'sse');

    // The next turn as the Gemini CLI sends it: ids on the call and the response.
    fake.reply({ framing: 'gemini', sse: [vEvent([{ text: 'It says ' }]), vEvent([{ text: 'hello.' }], { finishReason: 'STOP' }, { promptTokenCount: 50, candidatesTokenCount: 3, totalTokenCount: 53 })] });
    const history: Content[] = [
      { role: 'user', parts: [{ text: 'read a.txt' }] },
      { role: 'model', parts: [{ functionCall: { id: 'read_file_1_0', name: 'read_file', args: { file_path: 'a.txt' } }, thoughtSignature: signature }] },
      { role: 'user', parts: [{ functionResponse: { id: 'read_file_1_0', name: 'read_file', response: { output: 'hello\n' } } }] },
    ];
    const texts: string[] = [];
    for await (const c of await ai.models.generateContentStream({ model: 'gemini-3-pro-preview', contents: history, config })) if (c.text) texts.push(c.text);
    assert.deepEqual(texts, ['It says ', 'hello.']);
    const sent = fake.calls.at(-1)!.body;
    assert.deepEqual(sent.contents, [
      { role: 'user', parts: [{ text: 'read a.txt' }] },
      { role: 'model', parts: [{ functionCall: { name: 'read_file', args: { file_path: 'a.txt' } }, thoughtSignature: signature }] },
      { role: 'user', parts: [{ functionResponse: { name: 'read_file', response: { output: 'hello\n' } } }] },
    ]);
    assert.deepEqual(sent.tools, config.tools);
    const record = await lastGeneration(gw);
    assert.deepEqual(record.detail.warnings, ['functionCall/functionResponse id left out of 2 parts: Vertex AI does not accept it (calls and responses pair by name and order)']);
    assert.equal(record.prompt_tokens, 50);
    assert.equal(record.completion_tokens, 3);
  });

  it('streamGenerateContent without alt=sse: Vertex\'s events, byte for byte, as the JSON array\'s elements', async () => {
    const events = [vEvent([{ text: 'Arr' }]), vEvent([{ text: 'ay.', thoughtSignature: 'ZW5k' }], { finishReason: 'STOP' }, { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 })];
    fake.reply({ framing: 'gemini', sse: events });
    const res = await fetch(`${gw.origin}/v1beta/models/gemini-3-pro-preview:streamGenerateContent`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) });
    assert.equal(res.status, 200);
    assert.equal((await res.text()).trimStart(), `[${events.join(',\r\n')}]`);
    assert.equal(fake.calls.at(-1)!.query.get('alt'), 'sse');
  });

  it('a content without role goes up as "user" (Vertex requires one), with a warning', async () => {
    fake.reply({ json: GEMINI_TEXT });
    const res = await fetch(`${gw.origin}/v1beta/models/gemini-3-pro-preview:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key }, body: JSON.stringify({ contents: [{ parts: [{ text: 'no role' }] }] }) });
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as Json).responseId, GEMINI_TEXT.responseId);
    assert.deepEqual(fake.calls.at(-1)!.body.contents, [{ role: 'user', parts: [{ text: 'no role' }] }]);
    assert.deepEqual((await lastGeneration(gw)).detail.warnings, ['contents without role sent as role "user" (Vertex AI requires one)']);
  });

  it('countTokens: Vertex\'s own count (`:countTokens` with contents, systemInstruction and tools)', async () => {
    fake.reply({ json: { totalTokens: 77, totalBillableCharacters: 300 } });
    // (@google/genai sends systemInstruction and tools to countTokens only in Vertex mode: the generateContentRequest form carries them.)
    const body = { generateContentRequest: { model: 'models/gemini-3-pro-preview', contents: [{ role: 'user', parts: [{ text: 'how many?' }] }], systemInstruction: { parts: [{ text: 'be brief' }], role: 'user' }, tools: [{ functionDeclarations: [READ] }] } };
    const res = await fetch(`${gw.origin}/v1beta/models/gemini-3-pro-preview:countTokens`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-goog-api-key': key }, body: JSON.stringify(body) });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { totalTokens: 77 });
    const call = fake.calls.at(-1)!;
    assert.equal(call.path, `${MODEL_PATH}:countTokens`);
    assert.deepEqual(call.body, { contents: [{ role: 'user', parts: [{ text: 'how many?' }] }], systemInstruction: { parts: [{ text: 'be brief' }], role: 'user' }, tools: [{ functionDeclarations: [READ] }] });
    fake.reply({ json: { totalTokens: 5 } });
    assert.equal((await ai.models.countTokens({ model: 'gemini-3-pro-preview', contents: 'and now?' })).totalTokens, 5);
    assert.deepEqual(fake.calls.at(-1)!.body, { contents: [{ role: 'user', parts: [{ text: 'and now?' }] }] });
  });

  it('Google\'s built-in tools narrow the plan to the Vertex endpoint and go up as sent', async () => {
    const before = openai.requests.length;
    fake.reply({ json: { ...GEMINI_TEXT, candidates: [{ content: { role: 'model', parts: [{ text: 'grounded' }] }, finishReason: 'STOP', index: 0, groundingMetadata: { webSearchQueries: ['q'] } }] } });
    const res = await ai.models.generateContent({ model: 'test/openai-then-vertex', contents: 'news?', config: { tools: [{ googleSearch: {} }] } });
    assert.equal(res.text, 'grounded');
    assert.deepEqual(res.candidates?.[0]?.groundingMetadata, { webSearchQueries: ['q'] });
    assert.equal(openai.requests.length, before);
    assert.deepEqual(fake.calls.at(-1)!.body.tools, [{ googleSearch: {} }]);
  });
});
