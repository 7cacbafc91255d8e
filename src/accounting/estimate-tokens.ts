import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage, ContentPart } from '../api/chat-types.js';

/** Tokens of a text with the o200k tokenizer: an estimate for non-OpenAI models. */
export function estimateTextTokens(text: string): number {
  return text === '' ? 0 : countTokens(text);
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
 * Estimate the prompt tokens of a chat: message texts, tool calls and a per-message overhead.
 * Used for context-fit checks and when an upstream reports no usage.
 */
export function estimatePromptTokens(messages: readonly ChatMessage[], tools?: readonly unknown[]): number {
  let total = 3;
  for (const m of messages) {
    total += PER_MESSAGE;
    const content = 'content' in m ? m.content : null;
    if (typeof content === 'string') total += estimateTextTokens(content);
    else if (Array.isArray(content)) {
      for (const p of content) total += p.type === 'text' || p.type === 'refusal' ? estimateTextTokens(partText(p)) : PER_MEDIA_PART;
    }
    if (m.role === 'assistant' && m.tool_calls) {
      for (const tc of m.tool_calls) total += estimateTextTokens(tc.function.name) + estimateTextTokens(tc.function.arguments);
    }
  }
  if (tools && tools.length > 0) total += estimateTextTokens(JSON.stringify(tools));
  return total;
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
    let bytes = 3;
    for (const m of messages) {
      bytes += PER_MESSAGE;
      const content = 'content' in m ? m.content : null;
      if (typeof content === 'string') bytes += Buffer.byteLength(content);
      else if (Array.isArray(content)) {
        for (const p of content) bytes += p.type === 'text' || p.type === 'refusal' ? Buffer.byteLength(partText(p)) : PER_MEDIA_PART;
      }
      if (m.role === 'assistant' && m.tool_calls) {
        for (const tc of m.tool_calls) bytes += Buffer.byteLength(tc.function.name) + Buffer.byteLength(tc.function.arguments);
      }
    }
    if (tools && tools.length > 0) bytes += Buffer.byteLength(JSON.stringify(tools));
    this.upperBound = bytes;
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
