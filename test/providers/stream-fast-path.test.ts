/**
 * The stream transforms' fast paths (src/providers/openai/plain-text-chunk.ts, the text delta of
 * src/providers/anthropic/anthropic-stream-transform.ts): an event that is a text delta and
 * nothing else is read without JSON.parse. A match must read exactly what JSON.parse reads, and
 * every other event must miss (and be parsed in full).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readPlainTextChunk } from '../../src/providers/openai/plain-text-chunk.js';
import { createOpenAIStreamTransform } from '../../src/providers/openai/openai-stream-transform.js';
import { chatStreamEncoder } from '../../src/ingress/openai/chat/chat-stream-encoder.js';
import { createAnthropicStreamTransform } from '../../src/providers/anthropic/anthropic-stream-transform.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1764700000, model: 'gpt-4o-mini' };
const textChunk = (content: string, extra: Json = {}, choiceExtra: Json = {}, deltaExtra: Json = {}) =>
  JSON.stringify({ ...base, ...extra, choices: [{ index: 0, delta: { ...deltaExtra, content }, ...choiceExtra, finish_reason: null }] });

const TEXTS = ['Hello', ' w1', '', 'line\nbreak', 'tab\there "quoted" back\\slash', 'é ü 漢字 😀', '\u0001ctl', '</script> / slash', 'a\u2028b'];

test('plain text chunks: the fast path reads what JSON.parse reads', () => {
  const shapes = [
    (t: string) => textChunk(t),
    (t: string) => textChunk(t, {}, {}, { role: 'assistant' }),
    (t: string) => JSON.stringify({ ...base, service_tier: 'default', system_fingerprint: 'fp_44709d6fcb', choices: [{ index: 0, delta: { content: t }, logprobs: null, finish_reason: null }], usage: null, obfuscation: 'Ab3' }),
    (t: string) => JSON.stringify({ ...base, system_fingerprint: null, choices: [{ index: 0, delta: { role: 'assistant', content: t, refusal: null }, logprobs: null, finish_reason: null }] }),
  ];
  let matched = 0;
  for (const shape of shapes) {
    for (const t of TEXTS) {
      const data = shape(t);
      const parsed = JSON.parse(data) as Json;
      const got = readPlainTextChunk(data);
      assert.deepEqual(got, { id: parsed.id, text: parsed.choices[0].delta.content }, data);
      matched++;
    }
  }
  assert.equal(matched, shapes.length * TEXTS.length);
  // Escapes JSON.stringify never writes (upstreams may): decoded the same way.
  assert.deepEqual(readPlainTextChunk('{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"caf\\u00e9 \\/ \\ud83d\\ude00"},"finish_reason":null}]}'), { id: 'x', text: 'café / 😀' });
});

test('any other chunk misses the fast path', () => {
  const misses = [
    '[DONE]',
    '',
    ' ',
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 1, delta: { content: 'x' }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, logprobs: { content: [] }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { reasoning_content: 'think', content: 'x' }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x', reasoning: 'think' }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x', tool_calls: [] }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }], error: { message: 'boom' } }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: ['x'] }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }, { index: 1, delta: { content: 'y' }, finish_reason: null }] }),
    JSON.stringify({ ...base, id: 'a"b', choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] }),
    JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] }, null, 1),
    // Not JSON (a raw control character, a bad escape): the full parse reports it.
    '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a\u0001b"},"finish_reason":null}]}',
    '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a\\qb"},"finish_reason":null}]}',
    '{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"ab"},"finish_reason":null}]}}',
  ];
  for (const data of misses) assert.equal(readPlainTextChunk(data), undefined, data);
});

test('the transform gives the same parts, usage and warnings with chunks on and off the fast path', () => {
  const t = createOpenAIStreamTransform('up', 'chat');
  const parts = [
    ...t.push({ data: textChunk('Hel', {}, {}, { role: 'assistant' }) }),
    ...t.push({ data: textChunk('') }),
    // Off the fast path (whitespace), the same text part.
    ...t.push({ data: JSON.stringify(JSON.parse(textChunk('lo\n')), null, 1) }),
    ...t.push({ data: textChunk(' "w"', { id: 'chatcmpl-2' }) }),
    ...t.push({ data: JSON.stringify({ ...base, id: 'chatcmpl-2', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) }),
    ...t.push({ data: JSON.stringify({ ...base, id: 'chatcmpl-2', choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }) }),
  ];
  assert.deepEqual(parts, [{ type: 'text', text: 'Hel' }, { type: 'text', text: 'lo\n' }, { type: 'text', text: ' "w"' }]);
  assert.deepEqual(t.push({ data: '[DONE]' }), []);
  assert.equal(t.ended?.(), true);
  const end = t.flush();
  assert.deepEqual(end.map((p) => p.type), ['finish', 'usage']);
  assert.equal(end[0]!.type === 'finish' && end[0]!.finishReason, 'stop');
  assert.equal(end[1]!.type === 'usage' && end[1]!.usage.completionTokens, 4);
  assert.deepEqual(t.warnings?.(), ['the upstream stream changed its id mid-stream ("chatcmpl-1" → "chatcmpl-2"): the output may join two generations']);
});

test('a text chunk is encoded with the same bytes as the generic delta', () => {
  const enc = chatStreamEncoder({ id: 'gen-1', model: 'bench/x', created: 1764700000 });
  for (const text of TEXTS) {
    const generic = `data: {"id":"gen-1","object":"chat.completion.chunk","created":1764700000,"model":"bench/x","choices":[{"index":0,"delta":${JSON.stringify({ content: text })},"logprobs":null,"finish_reason":null}]}\n\n`;
    assert.equal(enc.part({ type: 'text', text }), generic);
  }
  const withLogprobs = enc.part({ type: 'text', text: 'x', logprobs: { content: [] } });
  assert.equal(withLogprobs, 'data: {"id":"gen-1","object":"chat.completion.chunk","created":1764700000,"model":"bench/x","choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[]},"finish_reason":null}]}\n\n');
});

test('Anthropic text deltas: the fast path gives the parts the full parse gives', () => {
  const ev = (type: string, rest: Json) => ({ event: type, data: JSON.stringify({ type, ...rest }) });
  const run = (events: { event: string; data: string }[]) => {
    const t = createAnthropicStreamTransform('anth');
    const parts = events.flatMap((e) => t.push(e));
    return [...parts, ...t.flush()];
  };
  const texts = ['Hello', ' "w"\n', 'é 😀 \u0001', ''];
  const fast = [
    ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...texts.map((text) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text } })),
    ev('content_block_stop', { index: 0 }),
    ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }),
    ev('message_stop', {}),
  ];
  // The same events with a space after each colon miss the fast path: the full parse reads them.
  const slow = fast.map((e) => ({ event: e.event, data: JSON.stringify(JSON.parse(e.data), null, 1) }));
  const a = run(fast);
  assert.deepEqual(a, run(slow));
  assert.deepEqual(a.filter((p) => p.type === 'text').map((p) => p.type === 'text' && p.text), ['Hello', ' "w"\n', 'é 😀 \u0001']);
  const usage = a.find((p) => p.type === 'usage');
  assert.equal(usage?.type === 'usage' && usage.usage.completionTokens, 7);
  const finish = a.find((p) => p.type === 'finish');
  assert.equal(finish?.type === 'finish' && finish.finishReason, 'stop');
  // A text delta of a thinking block is dropped either way; a tool's input_json_delta is not text.
  const t = createAnthropicStreamTransform('anth');
  t.push(ev('content_block_start', { index: 1, content_block: { type: 'thinking', thinking: '' } }));
  assert.deepEqual(t.push(ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'x' } })), []);
  assert.deepEqual(t.push(ev('content_block_delta', { index: 1, delta: { type: 'thinking_delta', thinking: 'hm' } })), [{ type: 'reasoning', text: 'hm' }]);
});
