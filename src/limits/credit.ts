import type { ChatRequest } from '../core/chat-types.js';
import { requestedOutputLimit } from '../core/output-limit.js';
import { toMicros } from '../accounting/cost.js';
import type { ResolvedEndpoint } from '../routing/resolved-endpoint.js';

/** USD decimal string → picodollars. */
export const usdToPico = (usd: string | number): bigint => toMicros(usd) * 1_000_000n;

/**
 * The output limit used for the worst case, in tokens: asked (at most the endpoint's maximum, as
 * `output_limit: clamp` sends it), else the endpoint's maximum, else what the context leaves.
 */
export function worstCaseOutputTokens(req: ChatRequest, target: ResolvedEndpoint, promptTokens: number): number {
  const asked = requestedOutputLimit(req);
  const cap = target.endpoint.max_completion_tokens;
  if (asked !== undefined) return cap !== undefined ? Math.min(asked, cap) : asked;
  return cap ?? Math.max(1, target.contextLength - promptTokens);
}

/**
 * The most a request can cost at an endpoint, in picodollars: estimated prompt tokens at the
 * prompt price, the output limit at the completion price, plus the per-request price.
 */
export function worstCaseCost(target: ResolvedEndpoint, promptTokens: number, outputTokens: number): bigint {
  const p = target.endpoint.pricing;
  return BigInt(promptTokens) * toMicros(p.prompt) + BigInt(outputTokens) * toMicros(p.completion) + usdToPico(p.request);
}

/** How many output tokens `availablePico` pays for after the prompt and request price. */
export function affordableOutputTokens(target: ResolvedEndpoint, promptTokens: number, availablePico: bigint): number {
  const p = target.endpoint.pricing;
  const left = availablePico - BigInt(promptTokens) * toMicros(p.prompt) - usdToPico(p.request);
  const perToken = toMicros(p.completion);
  if (left <= 0n) return 0;
  if (perToken === 0n) return Number.MAX_SAFE_INTEGER;
  return Number(left / perToken);
}
