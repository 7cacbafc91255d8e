import type { ChatRequest } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { usdToPico } from '../../limits/credit.js';
import { periodStart } from '../../limits/limit-store.js';
import type { ApiKey } from '../../store/keys.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * The admit stage: what a key may do, checked the same way for every client API, on the
 * internal request. (The key itself is authenticated by the server before the route.)
 */

/** A key's credit limit for this request: picodollars, and the start of its current period. */
export interface CreditLimit {
  keyId: string;
  limitPico: bigint;
  periodStart: number;
}

/**
 * Admit a request for a key: allowed models, rate limits (sets `x-ratelimit-*` headers on the
 * draft), and the credit limit the attempts will reserve against.
 * @returns the credit limit, or undefined when the key has none.
 * @throws GatewayError `model_not_allowed` (403), `rate_limited` (429), `limits_unavailable`.
 */
export async function admit(rt: GatewayRuntime, key: ApiKey, chat: ChatRequest, draft: GenerationDraft): Promise<CreditLimit | undefined> {
  enforceAllowedModels(key, chat);
  await enforceRateLimits(rt, key, draft.extraHeaders);
  if (key.settings.limit === null) return undefined;
  return { keyId: key.id, limitPico: usdToPico(key.settings.limit), periodStart: periodStart(key.settings.limit_reset, Date.now()) };
}

/**
 * Admit a request that generates nothing and costs no credit (`POST /v1/messages/count_tokens`):
 * allowed models, and the key's rate limits, counted like a generation request's; the
 * `x-ratelimit-*` headers go into `headers`.
 * @throws GatewayError `model_not_allowed` (403), `rate_limited` (429), `limits_unavailable`.
 */
export async function admitWithoutCredit(rt: GatewayRuntime, key: ApiKey, chat: ChatRequest, headers: Record<string, string>): Promise<void> {
  enforceAllowedModels(key, chat);
  await enforceRateLimits(rt, key, headers);
}

/**
 * A key with `allowed_models` may only ask for those: `model` must be allowed (403
 * `model_not_allowed`); disallowed entries of `models` are dropped.
 */
function enforceAllowedModels(key: ApiKey, req: ChatRequest): void {
  const allowed = key.settings.allowed_models;
  if (allowed.length === 0) return;
  if (!allowed.includes(req.model)) {
    throw new GatewayError('model_not_allowed', `this key may not use model ${JSON.stringify(req.model)}; allowed: ${allowed.join(', ')}`, { param: 'model' });
  }
  if (req.models) req.models = req.models.filter((m) => allowed.includes(m));
}

/** Go-style duration for `x-ratelimit-reset-*` (`12s`, `1m0s`). */
const goDuration = (ms: number): string => {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
};

/**
 * Count the request against the key's requests-per-minute limit and check its tokens-per-minute
 * limit; puts the `x-ratelimit-*` response headers into `headers`.
 * @throws GatewayError `rate_limited` (429, with Retry-After).
 */
async function enforceRateLimits(rt: GatewayRuntime, key: ApiKey, headers: Record<string, string>): Promise<void> {
  const { requests_per_minute: rpm, tokens_per_minute: tpm } = key.settings.rate_limit;
  const now = Date.now();
  if (rpm !== null) {
    const r = await rt.limits.hitRequests(key.id, rpm, now);
    Object.assign(headers, { 'x-ratelimit-limit-requests': String(r.limit), 'x-ratelimit-remaining-requests': String(r.remaining), 'x-ratelimit-reset-requests': goDuration(r.resetMs) });
    if (!r.ok) {
      throw new GatewayError('rate_limited', `rate limit of ${rpm} requests per minute reached for this key; retry in ${Math.ceil(r.resetMs / 1000)} s`, { retryAfterSeconds: Math.max(1, Math.ceil(r.resetMs / 1000)) });
    }
  }
  if (tpm !== null) {
    const t = await rt.limits.checkTokens(key.id, tpm, now);
    Object.assign(headers, { 'x-ratelimit-limit-tokens': String(t.limit), 'x-ratelimit-remaining-tokens': String(t.remaining), 'x-ratelimit-reset-tokens': goDuration(t.resetMs) });
    if (!t.ok) {
      throw new GatewayError('rate_limited', `rate limit of ${tpm} tokens per minute reached for this key; retry in ${Math.ceil(t.resetMs / 1000)} s`, { retryAfterSeconds: Math.max(1, Math.ceil(t.resetMs / 1000)) });
    }
  }
}
