/**
 * What an attempt collects and hides, called directly without a gateway: the
 * OutputAccumulator (src/pipeline/attempt/output-accumulator.ts: text, reasoning, tool calls,
 * finish, usage, the estimate when none is reported, a complete result and its replay as
 * parts) and hideReasoningText (src/pipeline/attempt/hide-reasoning.ts: `reasoning.exclude`
 * applied to `reasoning_details`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputAccumulator } from '../../src/pipeline/attempt/output-accumulator.js';
import { hideReasoningText } from '../../src/pipeline/attempt/hide-reasoning.js';
import type { ChatResult } from '../../src/core/chat-result.js';
import type { ReasoningDetail, Usage } from '../../src/core/chat-types.js';
import type { StreamPart } from '../../src/core/stream-part.js';

const usage = (promptTokens: number, completionTokens: number, over: Partial<Usage> = {}): Usage => ({ promptTokens, completionTokens, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream', ...over });
const accOf = (parts: StreamPart[]): OutputAccumulator => {
  const acc = new OutputAccumulator();
  for (const p of parts) acc.add(p);
  return acc;
};
const prompt = { estimate: () => 7 };

describe('OutputAccumulator.add', () => {
  test('text, reasoning and refusal pieces are joined; details appended; block markers and errors ignored', () => {
    const acc = accOf([
      { type: 'block-start', block: 'reasoning', index: 0 },
      { type: 'reasoning', text: 'thin' },
      { type: 'reasoning', text: 'king' },
      { type: 'reasoning-details', details: [{ type: 'reasoning.text', signature: 's1' }] },
      { type: 'reasoning-details', details: [{ type: 'reasoning.encrypted', data: 'd2' }] },
      { type: 'block-end', block: 'reasoning', index: 0 },
      { type: 'text', text: 'Hel' },
      { type: 'text', text: 'lo' },
      { type: 'refusal', text: 'no' },
      { type: 'error', error: { code: 'upstream_error', message: 'x' } } as unknown as StreamPart,
    ]);
    assert.equal(acc.text, 'Hello');
    assert.equal(acc.reasoning, 'thinking');
    assert.equal(acc.refusal, 'no');
    assert.deepEqual(acc.reasoningDetails, [{ type: 'reasoning.text', signature: 's1' }, { type: 'reasoning.encrypted', data: 'd2' }]);
    assert.equal(acc.finish, undefined);
    assert.equal(acc.usage, undefined);
  });

  test('tool calls by index: start names the call, deltas append arguments; a delta for an unknown index is dropped', () => {
    const acc = accOf([
      { type: 'tool-call-start', index: 0, id: 'call_a', name: 'f' },
      { type: 'tool-call-start', index: 1, id: 'call_b', name: 'g' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"y":' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '2}' },
      { type: 'tool-call-delta', index: 5, argumentsDelta: 'lost' },
    ]);
    assert.deepEqual(acc.toolCalls, [
      { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } },
      { id: 'call_b', type: 'function', function: { name: 'g', arguments: '{"y":2}' } },
    ]);
  });

  test('the last finish and the last usage win', () => {
    const acc = accOf([
      { type: 'finish', finishReason: 'length', nativeFinishReason: 'max_tokens' },
      { type: 'usage', usage: usage(1, 1) },
      { type: 'finish', finishReason: 'stop', nativeFinishReason: 'end_turn' },
      { type: 'usage', usage: usage(9, 4) },
    ]);
    assert.deepEqual(acc.finish, { type: 'finish', finishReason: 'stop', nativeFinishReason: 'end_turn' });
    assert.deepEqual(acc.usage, usage(9, 4));
  });
});

describe('OutputAccumulator answers', () => {
  test('hasAnswer: text, a refusal or a tool call; reasoning alone is no answer', () => {
    assert.equal(accOf([]).hasAnswer(), false);
    assert.equal(accOf([{ type: 'reasoning', text: 'r' }]).hasAnswer(), false);
    assert.equal(accOf([{ type: 'text', text: 't' }]).hasAnswer(), true);
    assert.equal(accOf([{ type: 'refusal', text: 'no' }]).hasAnswer(), true);
    assert.equal(accOf([{ type: 'tool-call-start', index: 0, id: 'c', name: 'f' }]).hasAnswer(), true);
  });

  test('reasoningOnly: no answer and reasoning text or reported reasoning tokens', () => {
    assert.equal(accOf([]).reasoningOnly(null), false, 'an empty answer without reasoning is a plain length finish');
    assert.equal(accOf([{ type: 'reasoning', text: 'r' }]).reasoningOnly(null), true);
    assert.equal(accOf([]).reasoningOnly(usage(5, 8, { reasoningTokens: 8 })), true);
    assert.equal(accOf([]).reasoningOnly(usage(5, 8, { reasoningTokens: 0 })), false);
    assert.equal(accOf([{ type: 'reasoning', text: 'r' }, { type: 'text', text: 't' }]).reasoningOnly(null), false);
  });
});

describe('OutputAccumulator.usageOr', () => {
  test('reported usage is returned as it is (the estimate is not asked)', () => {
    const reported = usage(3, 2);
    const acc = accOf([{ type: 'text', text: 'a long answer that would be estimated' }, { type: 'usage', usage: reported }]);
    assert.equal(acc.usageOr({ estimate: () => assert.fail('no estimate when usage is reported') }), reported);
  });

  test('estimated: the prompt estimate; the completion counts text, refusal, tool names and arguments, and reasoning', () => {
    const text = accOf([{ type: 'text', text: 'Hello world' }]).usageOr(prompt);
    assert.deepEqual({ ...text, completionTokens: 0 }, { promptTokens: 7, completionTokens: 0, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'estimated' });
    assert.ok(text.completionTokens! > 0);
    const more = accOf([
      { type: 'text', text: 'Hello world' },
      { type: 'reasoning', text: 'Let me think about this carefully' },
      { type: 'tool-call-start', index: 0, id: 'c', name: 'get_weather' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{"city":"Paris"}' },
    ]).usageOr(prompt);
    assert.ok(more.reasoningTokens! > 0);
    assert.ok(more.completionTokens! > text.completionTokens! + more.reasoningTokens!, 'tool calls count too');
    assert.equal(accOf([]).usageOr(prompt).completionTokens, 0);
  });
});

describe('OutputAccumulator from a complete result', () => {
  const result: ChatResult = {
    content: 'Hi',
    reasoning: 'hmm',
    reasoningDetails: [{ type: 'reasoning.text', text: 'hmm', signature: 'sig' }],
    refusal: null,
    toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
    finishReason: 'tool_calls',
    nativeFinishReason: 'tool_use',
    usage: usage(4, 6),
  };

  test('fromResult holds what a stream of the same answer would', () => {
    const acc = OutputAccumulator.fromResult(result);
    assert.deepEqual([acc.text, acc.reasoning, acc.refusal], ['Hi', 'hmm', '']);
    assert.deepEqual(acc.reasoningDetails, result.reasoningDetails);
    assert.deepEqual(acc.toolCalls, result.toolCalls);
    assert.deepEqual(acc.finish, { type: 'finish', finishReason: 'tool_calls', nativeFinishReason: 'tool_use' });
    assert.deepEqual(acc.usage, usage(4, 6));
    assert.equal(OutputAccumulator.fromResult({ ...result, content: null, reasoning: null, usage: null }).usage, undefined);
  });

  test('resultToParts replays it in order, and accumulating the parts gives fromResult back', () => {
    const parts = OutputAccumulator.resultToParts(result);
    assert.deepEqual(parts.map((p) => p.type), ['reasoning', 'reasoning-details', 'text', 'tool-call-start', 'tool-call-delta', 'finish', 'usage']);
    const replayed = accOf(parts);
    const direct = OutputAccumulator.fromResult(result);
    const view = (a: OutputAccumulator) => ({ text: a.text, reasoning: a.reasoning, refusal: a.refusal, reasoningDetails: a.reasoningDetails, toolCalls: a.toolCalls, finish: a.finish, usage: a.usage });
    assert.deepEqual(view(replayed), view(direct));
    assert.equal(replayed.text, result.content);
  });

  test('a long stream of deltas is kept whole and in order (joined every 128 pieces)', () => {
    const acc = new OutputAccumulator();
    const words = Array.from({ length: 1000 }, (_, i) => ` w${i}`);
    for (const w of words) acc.add({ type: 'text', text: w });
    acc.add({ type: 'text', text: '' });
    assert.equal(acc.text, words.join(''));
    acc.add({ type: 'text', text: ' end' });
    assert.equal(acc.text, `${words.join('')} end`);
    assert.equal(acc.hasAnswer(), true);
    assert.equal(new OutputAccumulator().hasAnswer(), false);
  });

  test('an empty result is a finish part only', () => {
    assert.deepEqual(OutputAccumulator.resultToParts({ content: null, reasoning: null, refusal: null, toolCalls: [], finishReason: 'stop', nativeFinishReason: null, usage: null }), [{ type: 'finish', finishReason: 'stop', nativeFinishReason: null }]);
  });
});

describe('hideReasoningText', () => {
  test('undefined stays undefined; nothing left to echo is undefined, not []', () => {
    assert.equal(hideReasoningText(undefined), undefined);
    assert.equal(hideReasoningText([]), undefined);
    assert.equal(hideReasoningText([{ type: 'reasoning.summary', text: 'sum' }, { type: 'reasoning.text', text: 'no signature' }]), undefined);
  });

  test('a signed reasoning.text keeps its signature and the rest, with its text emptied', () => {
    const d: ReasoningDetail = { type: 'reasoning.text', text: 'secret', signature: 'sig', format: 'anthropic-claude-v1', index: 0 };
    assert.deepEqual(hideReasoningText([d]), [{ type: 'reasoning.text', text: '', signature: 'sig', format: 'anthropic-claude-v1', index: 0 }]);
    assert.equal(d.text, 'secret', 'the input is not changed');
  });

  test('reasoning.encrypted keeps its data, loses any text or summary; summaries are dropped', () => {
    const details = [
      { type: 'reasoning.summary', text: 'a summary' },
      { type: 'reasoning.encrypted', data: 'opaque', text: 'leak', summary: ['leak'], id: 'rs_1' },
    ] as ReasoningDetail[];
    assert.deepEqual(hideReasoningText(details), [{ type: 'reasoning.encrypted', data: 'opaque', id: 'rs_1' }]);
  });

  test('order is kept', () => {
    const out = hideReasoningText([
      { type: 'reasoning.encrypted', data: 'd1' },
      { type: 'reasoning.text', text: 't', signature: 's2' },
      { type: 'reasoning.encrypted', data: 'd3' },
    ]);
    assert.deepEqual(out?.map((d) => d.data ?? d.signature), ['d1', 's2', 'd3']);
  });
});
