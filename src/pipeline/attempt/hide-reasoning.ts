import type { ReasoningDetail } from '../../core/chat-types.js';

/**
 * `reasoning.exclude: true` / `include_reasoning: false` applied to `reasoning_details`: the
 * model may think, the client sees none of the text. Some upstreams (Anthropic with
 * `display: "omitted"` ignored, OpenRouter-style upstreams) send the text anyway, so the gateway
 * strips it itself.
 *
 * Kept: what the client must echo back next turn and that holds no readable text — a
 * `reasoning.text` item's `signature` (its `text` removed, as Anthropic itself returns it with
 * `display: "omitted"`) and `reasoning.encrypted` items (opaque `data`). Dropped: `text` and
 * `summary` fields, `reasoning.summary` items, and items left with nothing to echo.
 *
 * @param details the upstream's reasoning details (undefined: none)
 * @returns the details safe to show; undefined when none remain
 * @see https://openrouter.ai/docs/use-cases/reasoning-tokens#reasoning-details-api-shape
 */
export function hideReasoningText(details: readonly ReasoningDetail[] | undefined): ReasoningDetail[] | undefined {
  if (!details) return undefined;
  const kept: ReasoningDetail[] = [];
  for (const d of details) {
    switch (d.type) {
      case 'reasoning.summary':
        continue;
      case 'reasoning.encrypted':
      case 'reasoning.text': {
        const { text: _text, ...rest } = d as ReasoningDetail & { summary?: unknown };
        delete (rest as { summary?: unknown }).summary;
        if (rest.signature === undefined && rest.data === undefined) continue;
        kept.push(d.type === 'reasoning.text' ? { ...rest, text: '' } : rest);
        continue;
      }
      default: {
        const never: never = d.type;
        void never;
      }
    }
  }
  return kept.length ? kept : undefined;
}
