/** The pure pieces of the ingress layer and the pipeline: content-block framing, lane choice, the registry. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ContentBlockFramer } from '../../src/core/content-blocks.js';
import type { OutputPart } from '../../src/core/stream-part.js';
import { INGRESS_ADAPTERS, ingressForPath } from '../../src/ingress/registry.js';
import { chatStreamEncoder } from '../../src/ingress/openai/chat/chat-stream-encoder.js';
import { chooseLane } from '../../src/pipeline/attempt/lane.js';
import type { GenerationInput } from '../../src/pipeline/state/generation-input.js';
import { ANTHROPIC_MESSAGES_LANE } from '../../src/providers/anthropic/native/messages.js';
import { OPENAI_COMPLETIONS_LANE } from '../../src/providers/openai/native/completions.js';
import { OPENAI_RESPONSES_LANE } from '../../src/providers/openai/native/responses.js';
import type { ProviderAdapter } from '../../src/providers/types.js';
import type { ResolvedEndpoint } from '../../src/routing/resolved-endpoint.js';

describe('content-block framing', () => {
  test('runs of one kind form one block; each tool call is a block; close ends the last', () => {
    const framer = new ContentBlockFramer();
    const input: OutputPart[] = [
      { type: 'reasoning', text: 'think' },
      { type: 'reasoning', text: 'ing' },
      { type: 'reasoning-details', details: [{ type: 'reasoning.text', signature: 'sig' }] },
      { type: 'text', text: 'Hello' },
      { type: 'text', text: '!' },
      { type: 'tool-call-start', index: 0, id: 'call_a', name: 'f' },
      { type: 'tool-call-delta', index: 0, argumentsDelta: '{}' },
      { type: 'tool-call-start', index: 1, id: 'call_b', name: 'g' },
      { type: 'tool-call-delta', index: 1, argumentsDelta: '{"x":1}' },
    ];
    const out = input.flatMap((p) => framer.push(p)).concat(framer.close());
    const markers = out.filter((p) => p.type === 'block-start' || p.type === 'block-end').map((p) => `${p.type}:${'block' in p ? p.block : ''}:${'index' in p ? p.index : ''}`);
    assert.deepEqual(markers, [
      'block-start:reasoning:0', 'block-end:reasoning:0',
      'block-start:text:1', 'block-end:text:1',
      'block-start:tool-call:2', 'block-end:tool-call:2',
      'block-start:tool-call:3', 'block-end:tool-call:3',
    ]);
    assert.equal(out.length, input.length + 8);
    // Each part keeps its order, right after the start of its block.
    assert.deepEqual(out[1], input[0]);
    assert.deepEqual(out.at(-2), input.at(-1));
    assert.deepEqual(framer.close(), []);
  });

  test('the chat encoder writes nothing for block markers', () => {
    const encoder = chatStreamEncoder({ id: 'gen_1', created: 1, model: 'm' });
    assert.equal(encoder.part({ type: 'block-start', block: 'text', index: 0 }), '');
    assert.equal(encoder.part({ type: 'block-end', block: 'text', index: 0 }), '');
  });
});

describe('lane choice', () => {
  const target = (supportsText: boolean) => ({ endpoint: { supports_text_completions: supportsText }, provider: { kind: 'openai' } }) as unknown as ResolvedEndpoint;
  const withCompletions = { native: { completions: OPENAI_COMPLETIONS_LANE } } as unknown as ProviderAdapter;
  const chatOnly = { native: {} } as unknown as ProviderAdapter;
  const input = (path: string) => ({ ingress: ingressForPath(path)! }) as GenerationInput;

  test('chat translates through the internal request on every endpoint', () => {
    assert.deepEqual(chooseLane(input('/v1/chat/completions'), target(true), withCompletions), { native: false, operation: 'chat' });
  });

  test('legacy completions go native only where the endpoint and its adapter serve them', () => {
    const lane = chooseLane(input('/v1/completions'), target(true), withCompletions);
    assert.deepEqual({ native: lane.native, operation: lane.operation }, { native: true, operation: 'text-completion' });
    assert.equal(lane, OPENAI_COMPLETIONS_LANE, 'the adapter\'s own lane, looked up');
    assert.deepEqual(chooseLane(input('/v1/completions'), target(false), withCompletions), { native: false, operation: 'chat' });
    assert.deepEqual(chooseLane(input('/v1/completions'), target(true), chatOnly), { native: false, operation: 'chat' });
  });

  test('Responses and Messages look up the adapter\'s lane; Responses also needs supports_responses', () => {
    const openai = { native: { responses: OPENAI_RESPONSES_LANE } } as unknown as ProviderAdapter;
    const anthropic = { native: { messages: ANTHROPIC_MESSAGES_LANE } } as unknown as ProviderAdapter;
    const withResponses = (on: boolean) => ({ endpoint: { supports_responses: on }, provider: { kind: 'openai' } }) as unknown as ResolvedEndpoint;
    assert.equal(chooseLane(input('/v1/responses'), withResponses(true), openai), OPENAI_RESPONSES_LANE);
    assert.deepEqual(chooseLane(input('/v1/responses'), withResponses(false), openai), { native: false, operation: 'chat' });
    assert.equal(chooseLane(input('/v1/messages'), withResponses(false), anthropic), ANTHROPIC_MESSAGES_LANE);
    assert.deepEqual(chooseLane(input('/v1/messages'), withResponses(true), openai), { native: false, operation: 'chat' });
    assert.equal(ANTHROPIC_MESSAGES_LANE.relayUpstream, true);
    assert.equal(typeof ANTHROPIC_MESSAGES_LANE.countTokens, 'function');
  });
});

describe('ingress registry', () => {
  test('one adapter per path and per API', () => {
    // Each API once, each path once (a new API adds its own line to the registry, not to this test).
    assert.equal(new Set(INGRESS_ADAPTERS.map((a) => a.api)).size, INGRESS_ADAPTERS.length);
    assert.equal(new Set(INGRESS_ADAPTERS.map((a) => a.path)).size, INGRESS_ADAPTERS.length);
    const pathOf = new Map(INGRESS_ADAPTERS.map((a) => [a.api, a.path]));
    assert.deepEqual(
      (['chat', 'completions', 'embeddings', 'messages', 'responses'] as const).map((api) => pathOf.get(api)),
      ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/messages', '/v1/responses'],
    );
    assert.equal(ingressForPath('/v1/completions')?.api, 'completions');
    // A sub-route answers errors in its API's envelope.
    assert.equal(ingressForPath('/v1/messages/count_tokens')?.api, 'messages');
    assert.equal(ingressForPath('/v1/nope'), undefined);
  });
});
