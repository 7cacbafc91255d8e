/**
 * The admit stage (src/pipeline/stages/admit.ts) called directly, without a gateway: a key's
 * `allowed_models` (403 `model_not_allowed`, `models` narrowed), its credit limit (picodollars
 * and the period start), and its rate limits through an in-memory limit store (`x-ratelimit-*`
 * headers, 429 `rate_limited` with Retry-After).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, admitWithoutCredit } from '../../src/pipeline/stages/admit.js';
import { GenerationDraft } from '../../src/pipeline/state/generation-draft.js';
import type { GatewayRuntime } from '../../src/pipeline/state/runtime.js';
import { MemoryLimitStore } from '../../src/limits/memory-limit-store.js';
import { keySettingsSchema, type KeySettings } from '../../src/store/key-settings.js';
import type { ApiKey } from '../../src/store/keys.js';
import type { ChatRequest } from '../../src/core/chat-types.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

/** A key with `settings` over the defaults (no limits, every model). */
const keyWith = (settings: Record<string, unknown> = {}, id = 'key_1'): ApiKey => ({
  id,
  name: 'k',
  prefix: 'sk-op-x',
  disabled: false,
  createdAt: 0,
  expiresAt: null,
  isAdmin: false,
  settings: keySettingsSchema.parse(settings) as KeySettings,
  team: null,
});

/** Only what admit reads of the runtime: the limit store. */
const runtime = (): GatewayRuntime => ({ limits: new MemoryLimitStore() }) as unknown as GatewayRuntime;
const chat = (model: string, models?: string[]): ChatRequest => ({ model, messages: [{ role: 'user', content: 'hi' }], ...(models ? { models } : {}) });
const draft = () => new GenerationDraft('gen_1', 'req_1', 'key_1', 'chat', false, 'm');

describe('admit: allowed models', () => {
  test('a key without allowed_models admits any model and leaves `models` as sent', async () => {
    const req = chat('a/one', ['a/two', 'b/three']);
    assert.deepEqual(await admit(runtime(), keyWith(), req, draft()), []);
    assert.deepEqual(req.models, ['a/two', 'b/three']);
  });

  test('a model outside allowed_models is 403 model_not_allowed naming the model and the list, param model', async () => {
    const key = keyWith({ allowed_models: ['a/one', 'a/two'] });
    await assert.rejects(admit(runtime(), key, chat('b/three'), draft()), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, 'model_not_allowed');
      assert.equal(err.status, 403);
      assert.equal(err.param, 'model');
      assert.equal(err.message, 'this key may not use model "b/three"; allowed: a/one, a/two');
      return true;
    });
  });

  test('disallowed entries of `models` are dropped, allowed ones keep their order', async () => {
    const req = chat('a/one', ['b/three', 'a/two', 'a/one']);
    await admit(runtime(), keyWith({ allowed_models: ['a/one', 'a/two'] }), req, draft());
    assert.deepEqual(req.models, ['a/two', 'a/one']);
  });

  test('admitWithoutCredit checks allowed models the same way', async () => {
    await assert.rejects(admitWithoutCredit(runtime(), keyWith({ allowed_models: ['a/one'] }), chat('a/two'), {}), { code: 'model_not_allowed' });
    await admitWithoutCredit(runtime(), keyWith({ allowed_models: ['a/one'] }), chat('a/one'), {});
  });
});

describe('admit: credit limit', () => {
  test('no limit: none (nothing to reserve against)', async () => {
    assert.deepEqual(await admit(runtime(), keyWith({ limit: null }), chat('m'), draft()), []);
  });

  test('a USD limit becomes picodollars; limit_reset never starts its period at 0', async () => {
    assert.deepEqual(await admit(runtime(), keyWith({ limit: '1.25' }, 'key_c'), chat('m'), draft()), [{ level: 'key', id: 'key_c', limitPico: 1_250_000_000_000n, periodStart: 0 }]);
  });

  test('the smallest limit (6 decimals) is exact', async () => {
    const credit = await admit(runtime(), keyWith({ limit: '0.000001' }), chat('m'), draft());
    assert.equal(credit[0]?.limitPico, 1_000_000n);
  });

  test('daily, weekly and monthly periods start at UTC midnight, Monday, the 1st', async () => {
    const now = Date.now();
    const d = new Date(now);
    const expected = {
      daily: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()),
      weekly: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7)),
      monthly: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
    };
    for (const [reset, start] of Object.entries(expected)) {
      const credit = await admit(runtime(), keyWith({ limit: '5', limit_reset: reset }), chat('m'), draft());
      assert.equal(credit[0]?.periodStart, start, reset);
      assert.equal(new Date(start).getUTCHours(), 0);
    }
  });
});

describe('admit: rate limits', () => {
  test('requests per minute: headers count down, the request over the limit is 429 with Retry-After', async () => {
    const rt = runtime();
    const key = keyWith({ rate_limit: { requests_per_minute: 2 } });
    const first = draft();
    await admit(rt, key, chat('m'), first);
    assert.equal(first.extraHeaders['x-ratelimit-limit-requests'], '2');
    assert.equal(first.extraHeaders['x-ratelimit-remaining-requests'], '1');
    assert.match(first.extraHeaders['x-ratelimit-reset-requests']!, /^(\d+s|1m0s)$/);
    assert.equal(first.extraHeaders['x-ratelimit-limit-tokens'], undefined, 'no token limit, no token headers');
    const second = draft();
    await admit(rt, key, chat('m'), second);
    assert.equal(second.extraHeaders['x-ratelimit-remaining-requests'], '0');
    const third = draft();
    await assert.rejects(admit(rt, key, chat('m'), third), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, 'rate_limited');
      assert.equal(err.status, 429);
      assert.match(err.message, /^rate limit of 2 requests per minute reached for this key; retry in \d+ s$/);
      assert.ok(err.retryAfterSeconds! >= 1 && err.retryAfterSeconds! <= 60, String(err.retryAfterSeconds));
      return true;
    });
    assert.equal(third.extraHeaders['x-ratelimit-remaining-requests'], '0', 'the refused request still gets the headers');
  });

  test('each key has its own window', async () => {
    const rt = runtime();
    const settings = { rate_limit: { requests_per_minute: 1 } };
    await admit(rt, keyWith(settings, 'key_a'), chat('m'), draft());
    await admit(rt, keyWith(settings, 'key_b'), chat('m'), draft());
    await assert.rejects(admit(rt, keyWith(settings, 'key_a'), chat('m'), draft()), { code: 'rate_limited' });
  });

  test('tokens per minute: checked without adding; over the limit once tokens were added', async () => {
    const rt = runtime();
    const key = keyWith({ rate_limit: { tokens_per_minute: 100 } });
    const d = draft();
    await admit(rt, key, chat('m'), d);
    assert.deepEqual([d.extraHeaders['x-ratelimit-limit-tokens'], d.extraHeaders['x-ratelimit-remaining-tokens']], ['100', '100']);
    assert.equal(d.extraHeaders['x-ratelimit-limit-requests'], undefined);
    await rt.limits.addTokens(key.id, 100, Date.now());
    await assert.rejects(admit(rt, key, chat('m'), draft()), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.code, 'rate_limited');
      assert.match(err.message, /^rate limit of 100 tokens per minute reached for this key; retry in \d+ s$/);
      return true;
    });
  });

  test('admitWithoutCredit puts the headers into the map it is given and counts the request', async () => {
    const rt = runtime();
    const key = keyWith({ rate_limit: { requests_per_minute: 1 } });
    const headers: Record<string, string> = {};
    await admitWithoutCredit(rt, key, chat('m'), headers);
    assert.equal(headers['x-ratelimit-remaining-requests'], '0');
    await assert.rejects(admit(rt, key, chat('m'), draft()), { code: 'rate_limited' });
  });
});
