/**
 * The finish stage's metering (src/pipeline/stages/finish.ts) called directly, without a
 * gateway: usage as reported or estimated, its cost at the endpoint's prices in picodollars,
 * the served endpoint and finish reason on the draft, usage clamped with a warning, and the
 * record text kept unless retention is `none`.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { keepContent, keepRecordText, meterAttempt, meterUsage } from '../../src/pipeline/stages/finish.js';
import { OutputAccumulator } from '../../src/pipeline/attempt/output-accumulator.js';
import { GenerationDraft } from '../../src/pipeline/state/generation-draft.js';
import type { GenerationInput } from '../../src/pipeline/state/generation-input.js';
import { parseConfig } from '../../src/config/load.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { MAX_USAGE_TOKENS, USAGE_CLAMPED } from '../../src/accounting/usage-bounds.js';
import type { Usage } from '../../src/core/chat-types.js';
import type { PromptSize } from '../../src/accounting/estimate-tokens.js';
import type { ResolvedEndpoint } from '../../src/routing/resolved-endpoint.js';
import { oneModelConfig } from '../helpers/gateway.js';

/** The one endpoint of `test/model` at `pricing` (USD per million tokens). */
function endpointAt(pricing: Record<string, number>): ResolvedEndpoint {
  const catalog = buildCatalog(parseConfig(oneModelConfig('http://127.0.0.1:9', { endpoint: { pricing } }), 'test'));
  return catalog.models.get('test/model')!.endpoints[0]!;
}

const usage = (promptTokens: number, completionTokens: number, over: Partial<Usage> = {}): Usage => ({ promptTokens, completionTokens, cachedTokens: null, cacheWriteTokens: null, reasoningTokens: null, source: 'upstream', ...over });
const draft = (retention: 'none' | number = 30) => new GenerationDraft('gen_1', 'req_1', 'key_1', 'chat', true, 'test/model', [], null, retention);
const input = (request: unknown): GenerationInput => ({ ingress: { recordedRequest: (r: unknown) => ({ recorded: r }) }, request, chat: { model: 'test/model', messages: [] }, stream: true }) as unknown as GenerationInput;

describe('meterUsage', () => {
  test('cost in picodollars at the endpoint prices; the served endpoint on the draft; USD returned', () => {
    const target = endpointAt({ prompt: 1000, completion: 2000 }); // $0.001 and $0.002 a token
    const d = draft();
    const usd = meterUsage(d, target, usage(10, 5));
    assert.equal(d.costPico, 10n * 1_000_000_000n + 5n * 2_000_000_000n);
    assert.equal(usd, 0.02);
    assert.deepEqual(d.usage, usage(10, 5));
    assert.deepEqual([d.servedModel, d.provider, d.endpoint, d.upstreamModel], ['test/model', 'up', target.id, 'upstream-model']);
    assert.deepEqual(d.warnings, []);
  });

  test('cached prompt tokens at the cache_read price, the rest at the prompt price', () => {
    const d = draft();
    meterUsage(d, endpointAt({ prompt: 1000, completion: 0, cache_read: 100 }), usage(10, 0, { cachedTokens: 4 }));
    assert.equal(d.costPico, 6n * 1_000_000_000n + 4n * 100_000_000n);
  });

  test('a per-request price is charged once, whatever the usage', () => {
    const d = draft();
    assert.equal(meterUsage(d, endpointAt({ prompt: 0, completion: 0, request: 0.5 }), usage(0, 0)), 0.5);
    assert.equal(d.costPico, 500_000_000_000n);
  });

  test('absurd counts are clamped before they are priced, with a usage_clamped warning', () => {
    const d = draft();
    meterUsage(d, endpointAt({ prompt: 1, completion: 1 }), usage(10, 5, { reasoningTokens: 9, cachedTokens: 1e15 }));
    assert.equal(d.usage!.cachedTokens, 10, 'cached tokens bounded by the prompt');
    assert.equal(d.usage!.reasoningTokens, 5, 'reasoning bounded by the completion');
    assert.equal(d.warnings.length, 1);
    assert.ok(d.warnings[0]!.startsWith(USAGE_CLAMPED), d.warnings[0]);
    const huge = draft();
    meterUsage(huge, endpointAt({ prompt: 1, completion: 1 }), usage(1e12, 1));
    assert.equal(huge.usage!.promptTokens, MAX_USAGE_TOKENS);
    assert.equal(huge.costPico, BigInt(MAX_USAGE_TOKENS) * 1_000_000n + 1_000_000n);
  });
});

describe('meterAttempt', () => {
  const prompt = { upperBound: 40, estimate: () => 40 } as unknown as PromptSize; // meterAttempt reads only estimate()

  test('reported usage and the finish reason of the stream', () => {
    const acc = new OutputAccumulator();
    acc.add({ type: 'text', text: 'Hello' });
    acc.add({ type: 'finish', finishReason: 'stop', nativeFinishReason: 'end_turn' });
    acc.add({ type: 'usage', usage: usage(12, 3) });
    const d = draft();
    const usd = meterAttempt(d, endpointAt({ prompt: 1000, completion: 1000 }), acc, prompt);
    assert.equal(usd, 0.015);
    assert.deepEqual([d.finishReason, d.nativeFinishReason], ['stop', 'end_turn']);
    assert.deepEqual(d.usage, usage(12, 3));
  });

  test('without reported usage: the prompt estimate and the tokenizer count, marked estimated', () => {
    const acc = new OutputAccumulator();
    acc.add({ type: 'text', text: 'Hello there, how are you today?' });
    const d = draft();
    meterAttempt(d, endpointAt({ prompt: 1000, completion: 1000 }), acc, prompt);
    assert.equal(d.usage!.source, 'estimated');
    assert.equal(d.usage!.promptTokens, 40);
    assert.ok(d.usage!.completionTokens! > 0);
    assert.equal(d.costPico, BigInt(40 + d.usage!.completionTokens!) * 1_000_000_000n);
    assert.deepEqual([d.finishReason, d.nativeFinishReason], [null, null], 'no finish part, no finish reason');
  });
});

describe('keepContent / keepRecordText', () => {
  test('the recorded request and the output (reasoning and tool calls only when there are any)', () => {
    const acc = new OutputAccumulator();
    acc.add({ type: 'text', text: 'ok' });
    const d = draft(30);
    keepContent(d, input({ asked: 1 }), acc);
    assert.deepEqual(d.content, { request: { recorded: { asked: 1 } }, output: { content: 'ok', reasoning: undefined, tool_calls: undefined } });
    acc.add({ type: 'reasoning', text: 'hmm' });
    acc.add({ type: 'tool-call-start', index: 0, id: 'call_1', name: 'f' });
    acc.add({ type: 'tool-call-delta', index: 0, argumentsDelta: '{}' });
    keepContent(d, input({ asked: 2 }), acc);
    assert.deepEqual(d.content, { request: { recorded: { asked: 2 } }, output: { content: 'ok', reasoning: 'hmm', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] } });
  });

  test('retention none keeps no text', () => {
    const d = draft('none');
    keepRecordText(d, input({ asked: 1 }), { any: 'output' });
    assert.equal(d.content, null);
    keepContent(d, input({ asked: 1 }), new OutputAccumulator());
    assert.equal(d.content, null);
  });
});
