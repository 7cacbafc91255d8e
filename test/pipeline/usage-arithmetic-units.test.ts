/**
 * Usage arithmetic (src/core/usage-arithmetic.ts) called directly: the poison sum of reported
 * counts (null + n = null) and of whole usages (the batches of an embeddings request), and the
 * wire totals where a count not reported reads 0 (`total_tokens`, Anthropic's `input_tokens`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addTokenCounts, addUsage, totalTokens, uncachedPromptTokens } from '../../src/core/usage-arithmetic.js';
import type { Usage } from '../../src/core/chat-types.js';

const usage = (over: Partial<Usage> = {}): Usage => ({ promptTokens: 10, completionTokens: 4, cachedTokens: 3, cacheWriteTokens: 2, reasoningTokens: 1, source: 'upstream', ...over });

describe('addTokenCounts', () => {
  test('adds two reported counts', () => {
    assert.equal(addTokenCounts(7, 5), 12);
    assert.equal(addTokenCounts(0, 0), 0);
  });

  test('null is not reported and poisons the sum, on either side', () => {
    assert.equal(addTokenCounts(null, 5), null);
    assert.equal(addTokenCounts(5, null), null);
    assert.equal(addTokenCounts(null, null), null);
    assert.equal(addTokenCounts(0, null), null, '0 is a report, null is not');
  });
});

describe('addUsage', () => {
  test('nothing added yet: the usage itself, same object, its source kept', () => {
    const estimated = usage({ source: 'estimated' });
    assert.equal(addUsage(null, estimated), estimated);
  });

  test('two reports: every count added, source upstream', () => {
    assert.deepEqual(addUsage(usage(), usage({ promptTokens: 20, completionTokens: 6, cachedTokens: 0, cacheWriteTokens: 5, reasoningTokens: 2 })), {
      promptTokens: 30, completionTokens: 10, cachedTokens: 3, cacheWriteTokens: 7, reasoningTokens: 3, source: 'upstream',
    });
  });

  test('a count one batch did not report is not reported for the whole; the others still add', () => {
    const embeddingBatch = (promptTokens: number, cachedTokens: number | null): Usage => ({ promptTokens, completionTokens: null, cachedTokens, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' });
    let sum: Usage | null = null;
    for (const u of [embeddingBatch(100, 0), embeddingBatch(50, null), embeddingBatch(25, 5)]) sum = addUsage(sum, u);
    assert.deepEqual(sum, { promptTokens: 175, completionTokens: null, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream' });
  });

  test('does not change its arguments', () => {
    const a = usage();
    const b = usage({ promptTokens: 1 });
    addUsage(a, b);
    assert.deepEqual([a, b], [usage(), usage({ promptTokens: 1 })]);
  });
});

describe('totalTokens', () => {
  test('prompt + completion; cached, cache-write and reasoning are inside them, not added again', () => {
    assert.equal(totalTokens(usage()), 14);
  });

  test('a count not reported reads 0; no usage is 0', () => {
    assert.equal(totalTokens(usage({ completionTokens: null })), 10);
    assert.equal(totalTokens(usage({ promptTokens: null })), 4);
    assert.equal(totalTokens(usage({ promptTokens: null, completionTokens: null })), 0);
    assert.equal(totalTokens(null), 0);
  });
});

describe('uncachedPromptTokens', () => {
  test('prompt minus cache reads and cache writes', () => {
    assert.equal(uncachedPromptTokens(usage()), 5);
    assert.equal(uncachedPromptTokens(usage({ cachedTokens: 0, cacheWriteTokens: 0 })), 10);
  });

  test('cache counts not reported read 0; no usage is 0', () => {
    assert.equal(uncachedPromptTokens(usage({ cachedTokens: null })), 8);
    assert.equal(uncachedPromptTokens(usage({ cachedTokens: null, cacheWriteTokens: null })), 10);
    assert.equal(uncachedPromptTokens(usage({ promptTokens: null, cachedTokens: null, cacheWriteTokens: null })), 0);
    assert.equal(uncachedPromptTokens(null), 0);
  });

  test('never below 0 when the cache counts exceed the prompt', () => {
    assert.equal(uncachedPromptTokens(usage({ promptTokens: 4, cachedTokens: 3, cacheWriteTokens: 2 })), 0);
    assert.equal(uncachedPromptTokens(usage({ promptTokens: null })), 0);
  });
});
