import type { ChatRequest } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { usdToPico } from '../../limits/credit.js';
import { periodStart } from '../../limits/limit-store.js';
import type { ApiKey } from '../../store/keys.js';
import { endUserLimitId, type EndUser } from '../../store/end-users.js';
import type { GenerationDraft } from '../state/generation-draft.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * The admit stage: what a key may do, checked the same way for every client API, on the
 * internal request. (The key itself is authenticated by the server before the route.) Three
 * levels, each with its own state in the limit store: the key, its team (over the sum of the
 * team's keys), and the request's end user (per key). A refusal says which level refused in
 * `metadata.level` (`key`, `team` or `end_user`).
 */

/** Which level of the limits a refusal or a credit limit is at. */
export type LimitLevel = 'key' | 'team' | 'end_user';

/** One credit limit of a request: picodollars, and the start of its current period. */
export interface CreditLimit {
  level: LimitLevel;
  /** The limit store's id: the key's id, the team's id, or {@link endUserLimitId}. */
  id: string;
  limitPico: bigint;
  periodStart: number;
  /** For level `end_user`: the key and the end user (to read the day's spend from the records). */
  endUser?: { keyId: string; user: EndUser };
}

/** The settled spend of a credit limit's period from the database (the limit store's `loadSpent`). */
export function loadCreditSpent(rt: GatewayRuntime, c: CreditLimit): Promise<bigint> {
  if (c.level === 'team') return rt.loadTeamSpent(c.id, c.periodStart);
  if (c.endUser) return rt.loadEndUserSpent(c.endUser.keyId, c.endUser.user, c.periodStart);
  return rt.loadSpent(c.id, c.periodStart);
}

/** A request with no credit limit at any level (shared: nothing allocated per request). */
const NO_CREDITS: readonly CreditLimit[] = Object.freeze([]);

/** The name of a level in messages. */
const LEVEL_NAME: Record<LimitLevel, string> = { key: 'this key', team: "this key's team", end_user: 'this end user' };

/**
 * Admit a request for a key: allowed models (the key's and its team's), rate limits of the key,
 * its team and the end user (sets `x-ratelimit-*` headers on the draft: the key's, else the
 * team's), and the credit limits the attempts will reserve against, key first.
 * @returns the credit limits (empty when none applies).
 * @throws GatewayError `model_not_allowed` (403) and `rate_limited` (429), each with
 *   `metadata.level`; `limits_unavailable` (503) when the limit store cannot be reached.
 */
export async function admit(rt: GatewayRuntime, key: ApiKey, chat: ChatRequest, draft: GenerationDraft, endUser?: EndUser): Promise<readonly CreditLimit[]> {
  enforceAllowedModels(key, chat);
  await enforceRateLimits(rt, key, draft.extraHeaders, endUser, draft);
  const team = key.team?.settings;
  const daily = endUser === undefined ? null : key.settings.end_user_limits.usd_per_day;
  if (key.settings.limit === null && (!team || team.limit === null) && daily === null) return NO_CREDITS;
  const now = Date.now();
  const credits: CreditLimit[] = [];
  if (key.settings.limit !== null) credits.push({ level: 'key', id: key.id, limitPico: usdToPico(key.settings.limit), periodStart: periodStart(key.settings.limit_reset, now) });
  if (team && team.limit !== null) credits.push({ level: 'team', id: key.team!.id, limitPico: usdToPico(team.limit), periodStart: periodStart(team.limit_reset, now) });
  if (endUser !== undefined && daily !== null) credits.push({ level: 'end_user', id: endUserLimitId(key.id, endUser), limitPico: usdToPico(daily), periodStart: periodStart('daily', now), endUser: { keyId: key.id, user: endUser } });
  return credits;
}

/**
 * Admit a request that generates nothing and costs no credit (`POST /v1/messages/count_tokens`):
 * allowed models, and the key's and its team's rate limits, counted like a generation
 * request's; the `x-ratelimit-*` headers go into `headers`.
 * @throws GatewayError `model_not_allowed` (403), `rate_limited` (429), `limits_unavailable`.
 */
export async function admitWithoutCredit(rt: GatewayRuntime, key: ApiKey, chat: ChatRequest, headers: Record<string, string>): Promise<void> {
  enforceAllowedModels(key, chat);
  await enforceRateLimits(rt, key, headers, undefined, undefined);
}

/**
 * A key with `allowed_models` may only ask for those, and a key of a team with
 * `allowed_models` only for those of the team's as well: `model` must be allowed by both (403
 * `model_not_allowed`, `metadata.level` the one that refused); disallowed entries of `models`
 * are dropped.
 */
function enforceAllowedModels(key: ApiKey, req: ChatRequest): void {
  check(key.settings.allowed_models, 'key', req);
  if (key.team) check(key.team.settings.allowed_models, 'team', req);
}

function check(allowed: readonly string[], level: 'key' | 'team', req: ChatRequest): void {
  if (allowed.length === 0) return;
  if (!allowed.includes(req.model)) {
    throw new GatewayError('model_not_allowed', `${LEVEL_NAME[level]} may not use model ${JSON.stringify(req.model)}; allowed: ${allowed.join(', ')}`, { param: 'model', metadata: { level } });
  }
  if (req.models) req.models = req.models.filter((m) => allowed.includes(m));
}

/** Go-style duration for `x-ratelimit-reset-*` (`12s`, `1m0s`). */
const goDuration = (ms: number): string => {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
};

const refused = (what: string, level: LimitLevel, resetMs: number) =>
  new GatewayError('rate_limited', `rate limit of ${what} per minute reached for ${LEVEL_NAME[level]}; retry in ${Math.ceil(resetMs / 1000)} s`, {
    retryAfterSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    metadata: { level },
  });

/** One level's per-minute limits: its limit store id and the limits (null: none). */
interface RateLevel {
  level: LimitLevel;
  id: string;
  rpm: number | null;
  tpm: number | null;
}

/**
 * Count the request against the requests-per-minute limits of the key, its team and the end
 * user, in that order (a level is counted only once the levels before it admitted the
 * request), and check their tokens-per-minute limits; puts the `x-ratelimit-*` response headers
 * into `headers` (the key's limits, else the team's). The ids of the levels with a token limit
 * other than the key's go into the draft's `tokenWindows`, so the request's tokens are added to them.
 * @throws GatewayError `rate_limited` (429, with Retry-After and `metadata.level`).
 */
async function enforceRateLimits(rt: GatewayRuntime, key: ApiKey, headers: Record<string, string>, endUser: EndUser | undefined, draft: GenerationDraft | undefined): Promise<void> {
  const levels: RateLevel[] = [];
  const k = key.settings.rate_limit;
  if (k.requests_per_minute !== null || k.tokens_per_minute !== null) levels.push({ level: 'key', id: key.id, rpm: k.requests_per_minute, tpm: k.tokens_per_minute });
  const t = key.team?.settings.rate_limit;
  if (t && (t.requests_per_minute !== null || t.tokens_per_minute !== null)) levels.push({ level: 'team', id: key.team!.id, rpm: t.requests_per_minute, tpm: t.tokens_per_minute });
  const e = key.settings.end_user_limits;
  if (endUser !== undefined && (e.requests_per_minute !== null || e.tokens_per_minute !== null)) levels.push({ level: 'end_user', id: endUserLimitId(key.id, endUser), rpm: e.requests_per_minute, tpm: e.tokens_per_minute });
  if (levels.length === 0) return;
  const now = Date.now();
  let requestHeaders = false;
  let tokenHeaders = false;
  for (const l of levels) {
    if (l.rpm !== null) {
      const r = await rt.limits.hitRequests(l.id, l.rpm, now);
      if (!requestHeaders && l.level !== 'end_user') {
        requestHeaders = true;
        Object.assign(headers, { 'x-ratelimit-limit-requests': String(r.limit), 'x-ratelimit-remaining-requests': String(r.remaining), 'x-ratelimit-reset-requests': goDuration(r.resetMs) });
      }
      if (!r.ok) throw refused(`${l.rpm} requests`, l.level, r.resetMs);
    }
    if (l.tpm !== null) {
      const tk = await rt.limits.checkTokens(l.id, l.tpm, now);
      if (!tokenHeaders && l.level !== 'end_user') {
        tokenHeaders = true;
        Object.assign(headers, { 'x-ratelimit-limit-tokens': String(tk.limit), 'x-ratelimit-remaining-tokens': String(tk.remaining), 'x-ratelimit-reset-tokens': goDuration(tk.resetMs) });
      }
      if (!tk.ok) throw refused(`${l.tpm} tokens`, l.level, tk.resetMs);
      if (l.level !== 'key' && draft) (draft.tokenWindows ??= []).push(l.id);
    }
  }
}
