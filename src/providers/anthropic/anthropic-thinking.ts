import type { ReasoningEffort } from '../../core/chat-types.js';
import type { AnthropicThinking } from './anthropic-wire-types.js';

/** Smallest thinking budget Anthropic accepts, in tokens. */
export const MIN_THINKING_BUDGET = 1024;

/** Largest thinking budget OpenRouter derives from an effort, in tokens. */
export const MAX_THINKING_BUDGET = 128_000;

/**
 * OpenRouter's share of the output limit (`max_tokens`) given to thinking per effort: the
 * budget is `max(min(max_tokens × ratio, 128000), 1024)`.
 *
 * | effort | ratio |
 * |---|---|
 * | max, xhigh | 0.95 |
 * | high | 0.8 |
 * | medium | 0.5 |
 * | low | 0.2 |
 * | minimal | 0.1 |
 *
 * `none` disables thinking.
 * @see https://openrouter.ai/docs/guides/best-practices/reasoning-tokens
 */
export const EFFORT_RATIOS: Readonly<Record<Exclude<ReasoningEffort, 'none'>, number>> = Object.freeze({
  minimal: 0.1,
  low: 0.2,
  medium: 0.5,
  high: 0.8,
  xhigh: 0.95,
  max: 0.95,
});

/** The effort used when reasoning is asked for without an effort or a token budget. */
const DEFAULT_EFFORT = 'medium';

/** What the client asked for: OpenRouter's `reasoning` object and/or OpenAI's `reasoning_effort`. */
export interface ReasoningRequest {
  reasoning?: { effort?: ReasoningEffort; max_tokens?: number; exclude?: boolean; enabled?: boolean } | undefined;
  reasoningEffort?: ReasoningEffort | null | undefined;
  /** The output limit the request asks for (or the default), tokens: efforts are a share of it. */
  maxTokens: number;
}

/**
 * The thinking budget a request asks for, in tokens, or null for no thinking:
 * `reasoning.enabled: false`, effort `none` or `reasoning.max_tokens: 0` disable it;
 * `reasoning.max_tokens` is used as given (at least 1024); an effort is OpenRouter's share of
 * the output limit ({@link EFFORT_RATIOS}), clamped to [1024, 128000]; a `reasoning` object
 * without either means medium.
 * @see https://openrouter.ai/docs/use-cases/reasoning-tokens
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#how-to-use-extended-thinking
 */
export function thinkingBudgetFor(r: ReasoningRequest): number | null {
  const { reasoning } = r;
  if (reasoning?.enabled === false) return null;
  if (reasoning?.max_tokens !== undefined) return reasoning.max_tokens === 0 ? null : Math.max(MIN_THINKING_BUDGET, reasoning.max_tokens);
  const effort = reasoning?.effort ?? r.reasoningEffort ?? (reasoning ? DEFAULT_EFFORT : undefined);
  if (effort === undefined || effort === null || effort === 'none') return null;
  return Math.max(Math.min(Math.floor(r.maxTokens * EFFORT_RATIOS[effort]), MAX_THINKING_BUDGET), MIN_THINKING_BUDGET);
}

/**
 * Whether to ask for summarized thinking (`display: "summarized"`): Claude 4 and later models
 * may omit the thinking text unless asked, so it is asked for whenever the client wants the
 * reasoning back (OpenRouter's default); Claude 3 models predate the parameter.
 */
export function wantsSummarizedThinking(upstreamModel: string, exclude: boolean): boolean {
  return !exclude && !/claude-3/.test(upstreamModel);
}

/** The `thinking` parameter and the `max_tokens` to send with it. */
export interface ThinkingPlan {
  thinking: AnthropicThinking;
  maxTokens: number;
  warnings: string[];
}

/**
 * Fit a thinking budget under the output limit. Anthropic counts thinking in `max_tokens` and
 * needs `budget_tokens < max_tokens`: when the asked limit is not above the budget, `max_tokens`
 * becomes limit + budget (the answer keeps the asked limit). With a known endpoint cap the total
 * is capped and the budget cut to half the cap; below 1024 tokens thinking is left off.
 * @param maxTokens the output limit asked for (or the default), tokens.
 * @param cap the endpoint's `max_completion_tokens`, tokens.
 * @param exclude `reasoning.exclude`: think, but do not return the text (`display: "omitted"`).
 * @param summarized ask for summarized thinking text (`display: "summarized"`).
 * @returns null (with the reason in `warnings`) when thinking cannot fit.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size
 */
export function planThinking(budget: number, maxTokens: number, cap: number | undefined, exclude: boolean, summarized = false): ThinkingPlan | { thinking: null; warnings: string[] } {
  const warnings: string[] = [];
  let total = maxTokens > budget ? maxTokens : maxTokens + budget;
  let budgetTokens = budget;
  if (cap !== undefined && total > cap) {
    total = cap;
    if (budgetTokens >= cap) {
      budgetTokens = Math.floor(cap / 2);
      warnings.push(`thinking budget ${budget} lowered to ${budgetTokens} to fit the endpoint's max_completion_tokens ${cap}`);
    }
  }
  if (budgetTokens < MIN_THINKING_BUDGET) {
    warnings.push(`thinking left off: the output limit ${total} leaves no room for the minimum budget of ${MIN_THINKING_BUDGET} tokens`);
    return { thinking: null, warnings };
  }
  const thinking: AnthropicThinking = { type: 'enabled', budget_tokens: budgetTokens };
  if (exclude) thinking.display = 'omitted';
  else if (summarized) thinking.display = 'summarized';
  return { thinking, maxTokens: total, warnings };
}
