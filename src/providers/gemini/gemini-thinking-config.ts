import type { ChatRequest, ReasoningEffort } from '../../core/chat-types.js';
import type { GeminiThinkingConfig } from './gemini-wire-types.js';

/** Share of the output limit given to thinking per effort (OpenRouter's budget rule). */
const EFFORT_RATIO: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  minimal: 0.1,
  low: 0.2,
  medium: 0.5,
  high: 0.8,
  xhigh: 0.95,
  max: 0.95,
};

/** Thinking budget per effort when the request sets no output limit, in tokens. */
const EFFORT_BUDGET: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 24576,
  max: 24576,
};

/** Smallest budget derived from an effort, in tokens. */
const MIN_EFFORT_BUDGET = 1024;

/** Whether a model takes `thinkingLevel` (Gemini 3 and later) rather than only a budget. */
export function usesThinkingLevel(upstreamModel: string): boolean {
  const m = /gemini-(\d+)/i.exec(upstreamModel);
  return m !== null && Number(m[1]) >= 3;
}

/** Largest thinking budget of a Gemini 2.5 model: 24576 for Flash models, 32768 otherwise (Pro). */
function budgetCap(upstreamModel: string): number {
  return /flash/i.test(upstreamModel) ? 24_576 : 32_768;
}

/** Gemini 2.5 Pro cannot turn thinking off; its smallest budget is 128. */
function minimumBudget(upstreamModel: string): number {
  return /gemini-2\.5-pro/i.test(upstreamModel) ? 128 : 0;
}

function levelFor(effort: ReasoningEffort, warnings: string[]): NonNullable<GeminiThinkingConfig['thinkingLevel']> {
  switch (effort) {
    case 'none':
      warnings.push('reasoning effort "none": Gemini 3 models cannot turn thinking off; sent thinkingLevel MINIMAL');
      return 'MINIMAL';
    case 'minimal':
      return 'MINIMAL';
    case 'low':
      return 'LOW';
    case 'medium':
      return 'MEDIUM';
    case 'high':
      return 'HIGH';
    case 'xhigh':
    case 'max':
      warnings.push(`reasoning effort "${effort}" clamped to thinkingLevel HIGH, the highest Gemini level`);
      return 'HIGH';
  }
}

function budgetFor(effort: Exclude<ReasoningEffort, 'none'>, outputLimit: number | undefined, cap: number): number {
  if (outputLimit === undefined) return Math.min(EFFORT_BUDGET[effort], cap);
  const budget = Math.min(Math.max(Math.floor(outputLimit * EFFORT_RATIO[effort]), MIN_EFFORT_BUDGET), cap);
  // Thinking counts against maxOutputTokens: leave room for the answer.
  return Math.max(0, Math.min(budget, outputLimit - 1));
}

/**
 * Map OpenAI/OpenRouter reasoning controls to Gemini's `thinkingConfig`. Only the controls the
 * endpoint supports are passed in; with neither, no `thinkingConfig` is sent (model default).
 *
 * - `includeThoughts: true` (thought summaries returned as reasoning) unless
 *   `reasoning.exclude` is true or thinking is turned off;
 * - `reasoning.max_tokens` → `thinkingBudget` (any model; clamped to the model's largest budget
 *   and below the output limit, with a warning);
 * - otherwise the effort (`reasoning.effort`, else `reasoning_effort`; `reasoning.enabled:
 *   false` means `none`; `enabled: true` alone keeps the model's default amount):
 *   - Gemini 3 and later (`gemini-3…` model names) → `thinkingLevel`: none/minimal → MINIMAL,
 *     low → LOW, medium → MEDIUM, high/xhigh/max → HIGH (none and xhigh/max warn);
 *   - other models (Gemini 2.5) → `thinkingBudget`: none → 0 (128 on 2.5 Pro, which cannot
 *     turn thinking off, with a warning); else with an output limit `L`:
 *     `min(max(L × ratio, 1024), cap, L − 1)`, ratios minimal 0.1, low 0.2, medium 0.5,
 *     high 0.8, xhigh/max 0.95; without one: minimal 1024, low 2048, medium 8192, high
 *     16384, xhigh/max 24576 (never above the cap: 24576 on Flash models, 32768 otherwise).
 * @see https://ai.google.dev/gemini-api/docs/thinking
 */
export function convertToGeminiThinkingConfig(
  reasoning: ChatRequest['reasoning'] | undefined,
  reasoningEffort: ReasoningEffort | null | undefined,
  upstreamModel: string,
  outputLimit: number | undefined,
  warnings: string[],
): GeminiThinkingConfig | undefined {
  if (!reasoning && !reasoningEffort) return undefined;
  const config: GeminiThinkingConfig = {};
  const cap = budgetCap(upstreamModel);
  let effort: ReasoningEffort | undefined = reasoning?.effort ?? reasoningEffort ?? undefined;
  if (reasoning?.enabled === false) effort = 'none';
  let off = false;
  if (reasoning?.max_tokens !== undefined) {
    let budget = reasoning.max_tokens;
    if (budget > cap) {
      warnings.push(`reasoning.max_tokens ${budget} clamped to ${cap}, the largest thinking budget of ${upstreamModel}`);
      budget = cap;
    }
    if (outputLimit !== undefined && budget >= outputLimit) {
      warnings.push(`reasoning.max_tokens ${budget} clamped to ${outputLimit - 1}, below the output limit ${outputLimit}`);
      budget = Math.max(0, outputLimit - 1);
    }
    config.thinkingBudget = budget;
    off = budget === 0;
  } else if (effort !== undefined && usesThinkingLevel(upstreamModel)) {
    config.thinkingLevel = levelFor(effort, warnings);
  } else if (effort === 'none') {
    const min = minimumBudget(upstreamModel);
    if (min > 0) warnings.push(`reasoning effort "none": ${upstreamModel} cannot turn thinking off; sent thinkingBudget ${min}`);
    config.thinkingBudget = min;
    off = min === 0;
  } else if (effort !== undefined) {
    config.thinkingBudget = budgetFor(effort, outputLimit, cap);
  }
  if (reasoning?.exclude !== true && !off && effort !== 'none') config.includeThoughts = true;
  return Object.keys(config).length > 0 ? config : undefined;
}
