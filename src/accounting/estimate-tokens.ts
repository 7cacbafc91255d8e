import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage, ContentPart } from '../core/chat-types.js';

/** Longest slice handed to the tokenizer at once, in characters. */
const SLICE = 1024;

/**
 * Tokens of a text with the o200k tokenizer: an estimate for non-OpenAI models. The tokenizer's
 * cost grows with the square of a run without word breaks (150 KB of "a" takes seconds), so
 * long texts are counted in slices of at most 1,024 characters, cut at a space where one is
 * near: linear time, and within a token or two per slice of the whole-text count.
 */
export function estimateTextTokens(text: string): number {
  if (text === '') return 0;
  if (text.length <= SLICE) return countTokens(text);
  let total = 0;
  for (let start = 0; start < text.length; ) {
    let end = Math.min(text.length, start + SLICE);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end);
      if (space > start + SLICE / 2) end = space;
      // Never split a UTF-16 surrogate pair.
      const code = text.charCodeAt(end - 1);
      if (code >= 0xd800 && code <= 0xdbff) end--;
    }
    total += countTokens(text.slice(start, end));
    start = end;
  }
  return total;
}

function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'refusal':
      return part.refusal;
    case 'image_url':
    case 'input_audio':
    case 'file':
      return '';
  }
}

/** Fixed cost per message of the chat template, in tokens (OpenAI's published rule of thumb). */
const PER_MESSAGE = 3;
/** Tokens a media part is counted as when estimating (images are billed far more variably). */
const PER_MEDIA_PART = 85;

/**
 * Size a chat prompt with a text measure: every text (message contents, tool-call names and
 * arguments, the tool definitions) measured, plus a fixed overhead per message and per media
 * part. The token estimate and the byte upper bound are the same walk with different measures.
 */
function measurePrompt(messages: readonly ChatMessage[], tools: readonly unknown[] | undefined, measure: (text: string) => number): number {
  let total = 3;
  for (const m of messages) {
    total += PER_MESSAGE;
    const content = 'content' in m ? m.content : null;
    if (typeof content === 'string') total += measure(content);
    else if (Array.isArray(content)) {
      for (const p of content) total += p.type === 'text' || p.type === 'refusal' ? measure(partText(p)) : PER_MEDIA_PART;
    }
    if (m.role === 'assistant' && m.tool_calls) {
      for (const tc of m.tool_calls) total += measure(tc.function.name) + measure(tc.function.arguments);
    }
  }
  if (tools && tools.length > 0) total += measure(JSON.stringify(tools));
  return total;
}

/**
 * Estimate the prompt tokens of a chat: message texts, tool calls and a per-message overhead.
 * Used for context-fit checks and when an upstream reports no usage.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[], tools?: readonly unknown[]): number {
  return measurePrompt(messages, tools, estimateTextTokens);
}

/**
 * A prompt's size in tokens, computed lazily: `upperBound` is cheap (UTF-8 bytes of the text —
 * a BPE token is at least one byte — plus the per-message overhead), `estimate()` runs the
 * tokenizer once, only when a decision needs it (a context fit the bound cannot settle, a
 * credit reservation, usage an upstream did not report).
 */
export class PromptSize {
  readonly upperBound: number;
  private cached: number | undefined;

  constructor(
    private readonly messages: readonly ChatMessage[],
    private readonly tools?: readonly unknown[],
  ) {
    this.upperBound = measurePrompt(messages, tools, (text) => Buffer.byteLength(text));
  }

  /** The tokenizer's count (o200k), computed once. */
  estimate(): number {
    this.cached ??= estimatePromptTokens(this.messages, this.tools);
    return this.cached;
  }
}

/** A prompt size given as a plain number of tokens (tests, callers that already counted). */
export function exactPromptSize(tokens: number): Pick<PromptSize, 'upperBound' | 'estimate'> {
  return { upperBound: tokens, estimate: () => tokens };
}
