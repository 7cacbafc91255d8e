import { createRequire } from 'node:module';
import type { ChatMessage, ContentPart } from '../core/chat-types.js';

/**
 * The o200k tokenizer of `gpt-tokenizer`, loaded the first time a count is needed: its ranks
 * cost about 69 MB of RSS (38 MB of heap) and ~130 ms to load, and most requests never need a
 * count (the cheap byte bound settles context-length and credit checks, upstreams report usage),
 * so a gateway that never estimates never pays for it. Loaded synchronously (the counts are
 * asked for inside synchronous code) through the package's CommonJS build.
 */
let tokenizer: ((text: string) => number) | undefined;
function countTokens(text: string): number {
  if (tokenizer === undefined) {
    // A package, not one of our folders: the layer lint's createRequire rule does not apply.
    // eslint-disable-next-line no-restricted-syntax
    const lib = createRequire(import.meta.url)('gpt-tokenizer') as typeof import('gpt-tokenizer');
    tokenizer = lib.countTokens;
  }
  return tokenizer(text);
}

/** Longest slice handed to the tokenizer at once, in characters. */
const SLICE = 1024;
/** How far back from a slice's end a space is looked for, in characters. */
const SPACE_WINDOW = SLICE / 2;

/**
 * Characters of one prompt the tokenizer reads exactly (128 Ki, ~40 ms of tokenizer time in the
 * worst case). Beyond it, texts are estimated from evenly spaced sample slices (see
 * {@link TokenEstimator}), so a 10 MB prompt costs the loop as much as a 128 KB one.
 */
export const EXACT_TOKENIZE_BUDGET = 128 * 1024;

/** Where the slice starting at `start` ends: at most {@link SLICE} long, at a near space, never inside a surrogate pair. */
function sliceEnd(text: string, start: number): number {
  let end = Math.min(text.length, start + SLICE);
  if (end < text.length) {
    // Bounded backwards scan: never past the window (an unbounded lastIndexOf on a text without
    // spaces rescans it to the start on every slice, quadratic in the text's length).
    for (let i = end - 1; i > end - SPACE_WINDOW; i--) {
      if (text.charCodeAt(i) === 32) {
        end = i;
        break;
      }
    }
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end--;
  }
  return end;
}

/**
 * Tokens of a text with the o200k tokenizer: an estimate for non-OpenAI models. The tokenizer's
 * cost grows with the square of a run without word breaks (150 KB of "a" takes seconds), so
 * long texts are counted in slices of at most 1,024 characters, cut at a space where one is
 * near: linear time, and within a token or two per slice of the whole-text count.
 */
export function estimateTextTokens(text: string): number {
  if (text === '') return 0;
  if (text.length <= SLICE) return countTokens(text);
  // Agents send the same long system prompt and history with every turn: a long text is
  // counted once, then found by its content (hashing it costs a small part of tokenizing it).
  const known = countCache.get(text);
  if (known !== undefined) return known;
  const count = countInSlices(text);
  if (cachedChars + text.length > COUNT_CACHE_CHARS) {
    countCache.clear();
    cachedChars = 0;
  }
  if (text.length <= COUNT_CACHE_CHARS / 4) {
    countCache.set(text, count);
    cachedChars += text.length;
  }
  return count;
}

/** Characters of long texts whose token counts are remembered (about 8 MB of strings at most). */
const COUNT_CACHE_CHARS = 4_000_000;
const countCache = new Map<string, number>();
let cachedChars = 0;

function countInSlices(text: string): number {
  let total = 0;
  for (let start = 0; start < text.length; ) {
    const end = sliceEnd(text, start);
    total += countTokens(text.slice(start, end));
    start = end;
  }
  return total;
}

/**
 * Token estimates with a bounded cost: texts are counted exactly (slice-wise) until
 * `budget` characters were tokenized; a text that does not fit the rest of the budget is
 * estimated from evenly spaced sample slices covering what is left of the budget; once the
 * budget is spent, texts are counted at the tokens-per-character rate seen so far. Linear in
 * the prompt's length with a tokenizer time bounded by the budget, exact for prompts under it.
 */
export class TokenEstimator {
  private countedChars = 0;
  private countedTokens = 0;

  /** @param budget characters the tokenizer may read in total. */
  constructor(private budget = EXACT_TOKENIZE_BUDGET) {}

  /** Estimated tokens of one text. */
  measure = (text: string): number => {
    if (text === '') return 0;
    if (text.length <= this.budget) {
      const tokens = estimateTextTokens(text);
      this.note(text.length, tokens);
      return tokens;
    }
    if (this.budget >= 4 * SLICE) {
      const samples = Math.floor(this.budget / SLICE);
      const stride = Math.floor(text.length / samples);
      let chars = 0;
      let tokens = 0;
      for (let i = 0; i < samples; i++) {
        const start = i * stride;
        const end = sliceEnd(text, start);
        chars += end - start;
        tokens += countTokens(text.slice(start, end));
      }
      this.note(chars, tokens);
      return Math.ceil((tokens * text.length) / Math.max(1, chars));
    }
    // Budget spent: the rate seen so far (a quarter token per character if none was seen).
    const rate = this.countedChars > 0 ? this.countedTokens / this.countedChars : 0.25;
    return Math.ceil(text.length * rate);
  };

  private note(chars: number, tokens: number): void {
    this.budget = Math.max(0, this.budget - chars);
    this.countedChars += chars;
    this.countedTokens += tokens;
  }
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
 * Used for context-fit checks and when an upstream reports no usage. Exact (o200k) up to
 * {@link EXACT_TOKENIZE_BUDGET} characters of text, sampled beyond (bounded loop time).
 */
export function estimatePromptTokens(messages: readonly ChatMessage[], tools?: readonly unknown[]): number {
  return measurePrompt(messages, tools, new TokenEstimator().measure);
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
