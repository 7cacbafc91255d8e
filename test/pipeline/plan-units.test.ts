/**
 * The plan stage (src/pipeline/stages/plan.ts) and the router's plan (src/routing/route-plan.ts)
 * called directly on a catalog built from a config object, without a gateway: the order and
 * reasons of a plan, what is excluded and why, the errors when nothing is left (and their
 * 400 with `param` on an API with `unservableStatus`), embeddings endpoints kept out of
 * generations, `restrictPlan`, and `couldServeLive` for the response cache.
 */
import { chatIngress } from '../../src/ingress/openai/chat/chat-adapter.js';
import { embeddingsIngress } from '../../src/ingress/openai/embeddings/embeddings-adapter.js';
import { messagesIngress } from '../../src/ingress/anthropic/messages/messages-adapter.js';
import { responsesIngress } from '../../src/ingress/openai/responses/responses-adapter.js';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../src/config/load.js';
import { buildCatalog } from '../../src/routing/catalog.js';
import { HealthRegistry } from '../../src/routing/endpoint-health.js';
import { plannableEndpoint, planRoute, refusedForWhatItAsked, type PlannedEndpoint, type RouteContext } from '../../src/routing/route-plan.js';
import { couldServeLive, planAttempts } from '../../src/pipeline/stages/plan.js';
import type { GenerationInput } from '../../src/pipeline/state/generation-input.js';
import type { GatewayRuntime } from '../../src/pipeline/state/runtime.js';
import { keySettingsSchema } from '../../src/store/key-settings.js';
import type { ApiKey } from '../../src/store/keys.js';
import type { ChatRequest } from '../../src/core/chat-types.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { ResolvedEndpoint } from '../../src/routing/resolved-endpoint.js';

const endpoint = (provider: string, over: Record<string, unknown> = {}) => ({ provider, upstream_model: `${provider}-m`, pricing: { prompt: 1, completion: 1 }, supported_parameters: ['max_tokens', 'max_completion_tokens', 'temperature'], ...over });

/**
 * `test/a`: cheap (max 100 output tokens) and dear endpoints; `test/b`: one endpoint, context
 * 1000; `test/capped`: the cheap endpoint alone; `test/emb`: an embeddings endpoint only; `test/mixed`: an embeddings and a chat endpoint.
 */
const catalog = buildCatalog(
  parseConfig(
    {
      providers: ['cheap', 'dear', 'bee', 'emb'].map((id) => ({ id, kind: 'openai', base_url: `http://127.0.0.1:9/${id}`, api_key: 'k' })),
      models: [
        { id: 'test/a', context_length: 100_000, endpoints: [endpoint('cheap', { max_completion_tokens: 100 }), endpoint('dear', { pricing: { prompt: 10, completion: 10 } })] },
        { id: 'test/b', context_length: 1000, endpoints: [endpoint('bee')] },
        { id: 'test/capped', context_length: 100_000, endpoints: [endpoint('cheap', { max_completion_tokens: 100 })] },
        { id: 'test/emb', context_length: 8192, endpoints: [endpoint('emb', { embeddings: true })] },
        { id: 'test/mixed', context_length: 8192, endpoints: [endpoint('emb', { embeddings: true }), endpoint('bee')] },
      ],
    },
    'test',
  ),
);
const health = () => new HealthRegistry({ failureThreshold: 5, openMs: 30000, windowMs: 60000, recentFailureMs: 30000 });
const ctx = (random = () => 0): RouteContext => ({ catalog, health: health(), random });
const chat = (model: string, over: Partial<ChatRequest> = {}): ChatRequest => ({ model, messages: [{ role: 'user', content: 'hi' }], ...over });
const providers = (plan: PlannedEndpoint[]) => plan.map((p) => p.target.provider.id);
const refusal = (fn: () => unknown): GatewayError => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GatewayError, String(err));
    return err;
  }
  return assert.fail('expected a GatewayError');
};

describe('planRoute', () => {
  test('provider.order pins the order; each endpoint says why it stands there', () => {
    const plan = planRoute(chat('test/a', { provider: { order: ['dear', 'cheap'] } }), ctx(), 10);
    assert.deepEqual(providers(plan.endpoints), ['dear', 'cheap']);
    assert.ok(plan.endpoints.every((p) => p.reason.startsWith('provider.order')), plan.endpoints.map((p) => p.reason).join());
    assert.deepEqual(plan.excluded, []);
  });

  test('sort by price puts the cheaper endpoint first', () => {
    const plan = planRoute(chat('test/a', { provider: { sort: 'price' } }), ctx(() => 0.99), 10);
    assert.deepEqual(providers(plan.endpoints), ['cheap', 'dear']);
  });

  test('`models` add fallbacks after the first model, reasons prefixed models[i]', () => {
    const plan = planRoute(chat('test/b', { models: ['test/a'], provider: { order: ['bee', 'cheap', 'dear'] } }), ctx(), 10);
    assert.deepEqual(providers(plan.endpoints), ['bee', 'cheap', 'dear']);
    assert.ok(plan.endpoints[1]!.reason.startsWith('models[0]:'), plan.endpoints[1]!.reason);
    assert.ok(!plan.endpoints[0]!.reason.startsWith('models['));
  });

  test('an output limit over max_completion_tokens excludes that endpoint, naming the reason', () => {
    const plan = planRoute(chat('test/a', { max_tokens: 500 }), ctx(), 10);
    assert.deepEqual(providers(plan.endpoints), ['dear']);
    assert.deepEqual(plan.excluded.map((e) => [e.model, e.reason]), [['test/a', 'max_completion_tokens']]);
    assert.equal(plan.excluded[0]!.endpoint, catalog.models.get('test/a')!.endpoints[0]!.id);
  });

  test('an unknown model: 404 no_endpoint_available, param model, the unknown ids in metadata', () => {
    const err = refusal(() => planRoute(chat('nope/x'), ctx(), 10));
    assert.equal(err.code, 'no_endpoint_available');
    assert.equal(err.status, 404);
    assert.equal(err.param, 'model');
    assert.deepEqual(err.metadata, { unknown_models: ['nope/x'] });
    assert.equal(refusedForWhatItAsked(err), false, 'an unknown model is not a refusal of what was asked');
  });

  test('a prompt over the context window: context_length_exceeded, param messages', () => {
    const err = refusal(() => planRoute(chat('test/b'), ctx(), 5000));
    assert.equal(err.code, 'context_length_exceeded');
    assert.equal(err.param, 'messages');
    assert.match(err.message, /^the request does not fit the context window of "test\/b": /);
    assert.deepEqual((err.metadata!.excluded as { reason: string }[]).map((e) => e.reason), ['context_length']);
  });

  test('only the output limit excluded them: no_endpoint_available with the hint, a refusal of what was asked', () => {
    const err = refusal(() => planRoute(chat('test/capped', { max_tokens: 500 }), ctx(), 10));
    assert.equal(err.code, 'no_endpoint_available');
    assert.match(err.message, /; lower the output limit, or have the operator set output_limit: clamp on the model to send at most its max_completion_tokens$/);
    assert.equal(refusedForWhatItAsked(err), true);
    const mixed = refusal(() => planRoute(chat('test/a', { max_tokens: 500, provider: { only: ['cheap'] } }), ctx(), 10));
    assert.deepEqual((mixed.metadata!.excluded as { reason: string }[]).map((e) => e.reason).sort(), ['max_completion_tokens', 'not_in_only']);
    assert.doesNotMatch(mixed.message, /lower the output limit/);
    assert.equal(refusedForWhatItAsked(mixed), true, 'provider preferences are what the request asked too');
  });

  test('only health excluded them: endpoints_unavailable with Retry-After, not a refusal of what was asked', () => {
    const h = health();
    const c = { catalog, health: h, random: () => 0 };
    const target = catalog.models.get('test/b')!.endpoints[0]!;
    h.recordFailure(target.id, { latencyMs: 5, rateLimited: true, retryAfterMs: 30_000 });
    const err = refusal(() => planRoute(chat('test/b'), c, 10));
    assert.equal(err.code, 'endpoints_unavailable');
    assert.ok(err.retryAfterSeconds! >= 1 && err.retryAfterSeconds! <= 30, String(err.retryAfterSeconds));
    assert.equal(refusedForWhatItAsked(err), false);
  });
});

describe('plannableEndpoint', () => {
  const b = catalog.models.get('test/b')!.endpoints[0]!;
  const prompt = { upperBound: 10, estimate: () => 10 };

  test('the endpoint when the request could be planned to it, health aside', () => {
    assert.equal(plannableEndpoint(chat('test/b'), catalog, 'test/b', b.id, prompt), b);
    assert.equal(plannableEndpoint(chat('test/a', { models: ['test/b'] }), catalog, 'test/b', b.id, prompt), b, 'a fallback model counts');
  });

  test('undefined for a model the request did not name, an endpoint of another model, or a prompt too long', () => {
    assert.equal(plannableEndpoint(chat('test/a'), catalog, 'test/b', b.id, prompt), undefined);
    assert.equal(plannableEndpoint(chat('test/a'), catalog, 'test/a', b.id, prompt), undefined);
    assert.equal(plannableEndpoint(chat('test/b'), catalog, 'test/b', b.id, { upperBound: 5000, estimate: () => 5000 }), undefined);
  });
});

describe('planAttempts', () => {
  const rt = { catalog, health: health(), random: () => 0 } as unknown as GatewayRuntime;
  const prompt = { upperBound: 10, estimate: () => 10 } as unknown as Parameters<typeof planAttempts>[2];
  const input = (ingress: Record<string, unknown>, req: ChatRequest, request: unknown = {}): GenerationInput => ({ ingress, request, chat: req, stream: false }) as unknown as GenerationInput;
  const chatApi = { ...chatIngress };

  test('the router plan for a generation, embeddings endpoints left out', () => {
    assert.deepEqual(providers(planAttempts(rt, input(chatApi, chat('test/mixed')), prompt)), ['bee']);
  });

  test('a generation for an embedding model: 404 no_endpoint_available, param model, pointing to /v1/embeddings', () => {
    const err = refusal(() => planAttempts(rt, input(chatApi, chat('test/emb')), prompt));
    assert.equal(err.code, 'no_endpoint_available');
    assert.equal(err.status, 404);
    assert.equal(err.param, 'model');
    assert.equal(err.message, '"test/emb" is an embedding model (its endpoints declare embeddings: true): send it to /v1/embeddings');
  });

  test('embeddings keep every endpoint; their context refusal names input', () => {
    const emb = { ...embeddingsIngress, restrictPlan: undefined }; // the stage alone: the adapter's own narrowing is tested with it
    assert.deepEqual(providers(planAttempts(rt, input(emb, chat('test/mixed', { provider: { order: ['emb', 'bee'] } })), prompt)), ['emb', 'bee']);
    const err = refusal(() => planAttempts(rt, input(emb, chat('test/b')), { upperBound: 5000, estimate: () => 5000 } as unknown as Parameters<typeof planAttempts>[2]));
    assert.equal(err.code, 'context_length_exceeded');
    assert.equal(err.param, 'input');
    assert.match(err.message, /^the longest input does not fit the context window of "test\/b"/);
  });

  test('restrictPlan narrows the plan with the request in its API shape', () => {
    const seen: unknown[] = [];
    const restricting = { ...chatApi, restrictPlan: (request: unknown, plan: PlannedEndpoint[]) => (seen.push(request), plan.filter((p) => p.target.provider.id === 'dear')) };
    assert.deepEqual(providers(planAttempts(rt, input(restricting, chat('test/a'), { native: true }), prompt)), ['dear']);
    assert.deepEqual(seen, [{ native: true }]);
  });

  test('with unservableStatus, a refusal of what was asked gets that status; param the output limit field when only it excluded', () => {
    const messages = { ...messagesIngress };
    const err = refusal(() => planAttempts(rt, input(messages, chat('test/capped', { max_tokens: 500 })), prompt));
    assert.equal(err.code, 'no_endpoint_available');
    assert.equal(err.status, 400);
    assert.equal(err.param, 'max_tokens');
    const responses = { ...responsesIngress, unservableStatus: 400 };
    assert.equal(refusal(() => planAttempts(rt, input(responses, chat('test/capped', { max_tokens: 500 })), prompt)).param, 'max_output_tokens');
    const chatOver = { ...chatIngress, unservableStatus: 400 };
    assert.equal(refusal(() => planAttempts(rt, input(chatOver, chat('test/capped', { max_tokens: 50, max_completion_tokens: 500 })), prompt)).param, 'max_completion_tokens');
    const mixed = refusal(() => planAttempts(rt, input(messages, chat('test/a', { max_tokens: 500, provider: { only: ['cheap'] } })), prompt));
    assert.equal(mixed.status, 400);
    assert.equal(mixed.param, null, 'not only the output limit: the router param as it was');
    const unknown = refusal(() => planAttempts(rt, input(messages, chat('nope/x')), prompt));
    assert.equal(unknown.status, 404, 'an unknown model keeps its 404');
  });

  test('without unservableStatus the router refusal is passed on as it is', () => {
    const err = refusal(() => planAttempts(rt, input(chatApi, chat('test/a', { max_tokens: 500, provider: { only: ['cheap'] } })), prompt));
    assert.equal(err.status, 404);
    assert.equal(err.param, null);
  });
});

describe('couldServeLive', () => {
  const rt = { catalog } as unknown as GatewayRuntime;
  const prompt = { upperBound: 10, estimate: () => 10 };
  const key = (allowed: string[] = []): ApiKey => ({ id: 'k', name: 'k', prefix: 'p', disabled: false, createdAt: 0, expiresAt: null, isAdmin: false, settings: keySettingsSchema.parse({ allowed_models: allowed }), team: null });
  const input = (ingress: Record<string, unknown>, req: ChatRequest): GenerationInput => ({ ingress, request: {}, chat: req, stream: false }) as unknown as GenerationInput;
  const chatApi = { ...chatIngress };
  const [emb, bee] = catalog.models.get('test/mixed')!.endpoints as [ResolvedEndpoint, ResolvedEndpoint];

  test('true for an endpoint the key and the request could reach live', () => {
    assert.equal(couldServeLive(rt, input(chatApi, chat('test/mixed')), key(), 'test/mixed', bee.id, prompt), true);
  });

  test('false without a model or endpoint, for a model the key may not use, or an embeddings endpoint for a generation', () => {
    assert.equal(couldServeLive(rt, input(chatApi, chat('test/mixed')), key(), null, bee.id, prompt), false);
    assert.equal(couldServeLive(rt, input(chatApi, chat('test/mixed')), key(), 'test/mixed', null, prompt), false);
    assert.equal(couldServeLive(rt, input(chatApi, chat('test/mixed')), key(['test/a']), 'test/mixed', bee.id, prompt), false);
    assert.equal(couldServeLive(rt, input(chatApi, chat('test/mixed')), key(), 'test/mixed', emb.id, prompt), false);
    assert.equal(couldServeLive(rt, input({ ...embeddingsIngress }, chat('test/mixed')), key(), 'test/mixed', emb.id, prompt), true);
  });

  test('restrictPlan decides last; one that throws means no', () => {
    const keeps = { ...chatApi, restrictPlan: (_r: unknown, plan: PlannedEndpoint[]) => plan };
    const drops = { ...chatApi, restrictPlan: () => [] };
    const throws = { ...chatApi, restrictPlan: () => { throw new Error('no'); } };
    assert.equal(couldServeLive(rt, input(keeps, chat('test/mixed')), key(), 'test/mixed', bee.id, prompt), true);
    assert.equal(couldServeLive(rt, input(drops, chat('test/mixed')), key(), 'test/mixed', bee.id, prompt), false);
    assert.equal(couldServeLive(rt, input(throws, chat('test/mixed')), key(), 'test/mixed', bee.id, prompt), false);
  });
});
