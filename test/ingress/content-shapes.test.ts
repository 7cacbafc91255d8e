/**
 * Message shapes some upstreams cannot take (issue 9 §4): servers that accept only string
 * `content` (DeepSeek, Groq, or any endpoint with `string_content: true`) get text parts joined
 * in order; image, audio and file parts sent to a model whose input modalities lack them are a
 * 400 naming the part before any upstream call; models that reject a system instruction (Gemma
 * on the Gemini API) get system and developer text folded into the first user turn.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const OK = { json: { id: 'x', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } } };
const GEMINI_OK = { json: { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1, totalTokenCount: 4 } } };
const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const VISION = { input_modalities: ['text', 'image'] };

describe('string content, input modalities and folded system prompts', () => {
  let oa: Upstream;
  let ge: Upstream;
  let gw: TestGateway;
  before(async () => {
    [oa, ge] = [await startUpstream(), await startUpstream()];
    const ep = (provider: string, extra: Json = {}) => ({ provider, upstream_model: `${provider}-model`, supported_parameters: ['max_tokens'], ...extra });
    gw = await startGateway({
      providers: [
        { id: 'plain', kind: 'openai', base_url: oa.url },
        { id: 'deepseek', kind: 'openai', dialect: 'deepseek', base_url: oa.url },
        { id: 'google', kind: 'gemini', base_url: new URL(ge.url).origin, api_key: 'k' },
      ],
      models: [
        { id: 'test/plain', context_length: 8192, architecture: VISION, endpoints: [ep('plain')] },
        { id: 'test/plain-string', context_length: 8192, architecture: VISION, endpoints: [ep('plain', { string_content: true })] },
        { id: 'test/deepseek', context_length: 8192, endpoints: [ep('deepseek')] },
        { id: 'test/deepseek-arrays', context_length: 8192, endpoints: [ep('deepseek', { string_content: false })] },
        { id: 'test/text-only', context_length: 8192, endpoints: [ep('plain')] },
        { id: 'test/gemma', context_length: 8192, endpoints: [ep('google', { upstream_model: 'gemma-3-27b-it' })] },
        { id: 'test/gemma-native', context_length: 8192, endpoints: [ep('google', { upstream_model: 'gemma-3-27b-it', fold_system_prompt: false })] },
        { id: 'test/gemini', context_length: 8192, endpoints: [ep('google', { upstream_model: 'gemini-2.5-flash' })] },
        { id: 'test/plain-folded', context_length: 8192, endpoints: [ep('plain', { fold_system_prompt: true })] },
      ],
    });
  });
  after(async () => {
    await gw.close();
    await oa.close();
    await ge.close();
  });

  const post = async (body: Json) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Json };
  };

  const TEXT_ARRAYS = [
    { role: 'system', content: [{ type: 'text', text: 'Be terse.' }, { type: 'text', text: 'Answer in French.' }] },
    { role: 'user', content: [{ type: 'text', text: '<task>weather</task>' }, { type: 'text', text: '<env>Paris</env>' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Calling.' }], tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'sunny' }] },
  ];

  test('DeepSeek (string content by default) gets every text-only array as one string, parts in order', async () => {
    oa.enqueue(OK);
    assert.equal((await post({ model: 'test/deepseek', messages: TEXT_ARRAYS })).status, 200);
    assert.deepEqual((oa.requests.at(-1)!.json as Json).messages.map((m: Json) => m.content), [
      'Be terse.\n\nAnswer in French.',
      '<task>weather</task>\n\n<env>Paris</env>',
      'Calling.',
      'sunny',
    ]);
  });

  test('the endpoint setting wins over the dialect both ways', async () => {
    oa.enqueue(OK, OK);
    assert.equal((await post({ model: 'test/plain-string', messages: TEXT_ARRAYS })).status, 200);
    assert.equal((oa.requests.at(-1)!.json as Json).messages[1].content, '<task>weather</task>\n\n<env>Paris</env>');
    assert.equal((await post({ model: 'test/deepseek-arrays', messages: TEXT_ARRAYS })).status, 200);
    assert.deepEqual((oa.requests.at(-1)!.json as Json).messages[1].content, TEXT_ARRAYS[1]!.content);
    // The default dialect keeps arrays.
    oa.enqueue(OK);
    await post({ model: 'test/plain', messages: TEXT_ARRAYS });
    assert.deepEqual((oa.requests.at(-1)!.json as Json).messages[0].content, TEXT_ARRAYS[0]!.content);
  });

  test('an image for a string-content endpoint is a 400 naming the part, before any upstream call', async () => {
    const before = oa.requests.length;
    const messages = [...TEXT_ARRAYS, { role: 'user', content: [{ type: 'text', text: 'and this?' }, { type: 'image_url', image_url: { url: PNG } }] }];
    const res = await post({ model: 'test/plain-string', messages });
    assert.equal(res.status, 400);
    assert.equal(res.json.error.code, 'unsupported_input_modality');
    assert.equal(res.json.error.param, 'messages[4].content[1]');
    assert.match(res.json.error.message, /^messages\[4\]\.content\[1\]: image_url parts cannot be sent to plain\/plain-model, which takes string content only/);
    assert.equal(oa.requests.length, before);
  });

  test('image, audio and file parts for a text-only model: 400 naming the message and part, no upstream call', async () => {
    const before = oa.requests.length;
    const cases: [Json, string, string][] = [
      [{ type: 'image_url', image_url: { url: PNG } }, 'image', 'messages[3].content[1]'],
      [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }, 'audio', 'messages[3].content[1]'],
      [{ type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } }, 'file', 'messages[3].content[1]'],
    ];
    for (const [part, modality, param] of cases) {
      const messages = [
        { role: 'system', content: 'x' },
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: [{ type: 'text', text: 'look' }, part] },
      ];
      const res = await post({ model: 'test/text-only', messages });
      assert.equal(res.status, 400);
      assert.equal(res.json.error.code, 'unsupported_input_modality');
      assert.equal(res.json.error.param, param);
      assert.equal(res.json.error.message, `${param}: model "test/text-only" does not take ${modality} input (its input_modalities: text)`);
    }
    assert.equal(oa.requests.length, before);
    // A model in `models` that takes images answers instead.
    oa.enqueue(OK);
    const res = await post({ model: 'test/text-only', models: ['test/plain'], messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: PNG } }] }] });
    assert.equal(res.status, 200);
    assert.equal(res.json.model, 'test/plain');
  });

  const SYSTEM_AND_USER = [
    { role: 'system', content: 'You are terse.' },
    { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
    { role: 'user', content: 'Weather in Paris?' },
  ];

  test('Gemma on the Gemini API: system and developer text folded into the first user turn, no systemInstruction', async () => {
    ge.enqueue(GEMINI_OK);
    assert.equal((await post({ model: 'test/gemma', messages: SYSTEM_AND_USER })).status, 200);
    const sent = ge.requests.at(-1)!.json as Json;
    assert.equal(sent.systemInstruction, undefined);
    assert.deepEqual(sent.contents, [{ role: 'user', parts: [{ text: 'You are terse.\n\nUse metric units.' }, { text: 'Weather in Paris?' }] }]);
  });

  test('fold_system_prompt: false keeps systemInstruction for Gemma; Gemini models keep it by default', async () => {
    ge.enqueue(GEMINI_OK, GEMINI_OK);
    for (const model of ['test/gemma-native', 'test/gemini']) {
      assert.equal((await post({ model, messages: SYSTEM_AND_USER })).status, 200);
      const sent = ge.requests.at(-1)!.json as Json;
      assert.deepEqual(sent.systemInstruction, { parts: [{ text: 'You are terse.' }, { text: 'Use metric units.' }] }, model);
      assert.deepEqual(sent.contents, [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }], model);
    }
  });

  test('fold_system_prompt: true on an OpenAI-compatible endpoint', async () => {
    oa.enqueue(OK);
    assert.equal((await post({ model: 'test/plain-folded', messages: SYSTEM_AND_USER })).status, 200);
    assert.deepEqual((oa.requests.at(-1)!.json as Json).messages, [{ role: 'user', content: 'You are terse.\n\nUse metric units.\n\nWeather in Paris?' }]);
  });
});
