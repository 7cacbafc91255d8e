import type { ReasoningDetail, ToolCall, Usage } from '../../core/chat-types.js';
import type { ChatResult } from '../../core/chat-result.js';
import type { StreamPart } from '../../core/stream-part.js';
import { TokenEstimator } from '../../accounting/estimate-tokens.js';

/** Pieces appended before they are joined into one string (see {@link AppendedText}). */
const JOIN_EVERY = 128;

/**
 * Text appended piece by piece over a long stream, held flat. `a += b` per piece would keep a
 * rope (a 32-byte ConsString plus the piece's own string per delta: about 56 bytes per chunk, so
 * ~340 KB per held stream after 10 minutes at one chunk per 100 ms); here the pieces are joined
 * every {@link JOIN_EVERY} into one flat string, so a held stream keeps about its text's bytes
 * (and one rope node per JOIN_EVERY pieces).
 */
class AppendedText {
  private flat = '';
  private pieces: string[] = [];

  get empty(): boolean {
    return this.flat === '' && this.pieces.length === 0;
  }

  append(piece: string): void {
    if (piece === '') return;
    this.pieces.push(piece);
    if (this.pieces.length >= JOIN_EVERY) this.join();
  }

  reset(value: string): void {
    this.flat = value;
    this.pieces = [];
  }

  toString(): string {
    if (this.pieces.length > 0) this.join();
    return this.flat;
  }

  private join(): void {
    // The pieces become one flat string (and garbage); the text is one rope node per
    // JOIN_EVERY pieces, flattened by V8 once when it is read.
    this.flat += this.pieces.join('');
    this.pieces = [];
  }
}

/**
 * Collects what a stream produced: text, reasoning, tool calls, the finish reason and usage.
 * Used for the generation record, for the reasoning-exhausted check and to estimate usage when
 * the upstream reports none.
 */
export class OutputAccumulator {
  private readonly textParts = new AppendedText();
  private readonly reasoningParts = new AppendedText();
  private readonly refusalParts = new AppendedText();
  readonly reasoningDetails: ReasoningDetail[] = [];
  readonly toolCalls: ToolCall[] = [];
  finish: Extract<StreamPart, { type: 'finish' }> | undefined;
  usage: Usage | undefined;

  /** The answer's text so far. */
  get text(): string {
    return this.textParts.toString();
  }

  set text(value: string) {
    this.textParts.reset(value);
  }

  /** The reasoning text so far. */
  get reasoning(): string {
    return this.reasoningParts.toString();
  }

  set reasoning(value: string) {
    this.reasoningParts.reset(value);
  }

  /** The refusal text so far. */
  get refusal(): string {
    return this.refusalParts.toString();
  }

  set refusal(value: string) {
    this.refusalParts.reset(value);
  }

  add(part: StreamPart): void {
    switch (part.type) {
      case 'text':
        this.textParts.append(part.text);
        break;
      case 'reasoning':
        this.reasoningParts.append(part.text);
        break;
      case 'refusal':
        this.refusalParts.append(part.text);
        break;
      case 'reasoning-details':
        this.reasoningDetails.push(...part.details);
        break;
      case 'tool-call-start':
        this.toolCalls[part.index] = { id: part.id, type: 'function', function: { name: part.name, arguments: '' } };
        break;
      case 'tool-call-delta': {
        const call = this.toolCalls[part.index];
        if (call) call.function.arguments += part.argumentsDelta;
        break;
      }
      case 'finish':
        this.finish = part;
        break;
      case 'usage':
        this.usage = part.usage;
        break;
      case 'block-start':
      case 'block-end':
      case 'error':
        break;
    }
  }

  /** Whether the output has an answer (text or a tool call), as opposed to only reasoning. */
  hasAnswer(): boolean {
    return !this.textParts.empty || !this.refusalParts.empty || this.toolCalls.length > 0;
  }

  /**
   * Whether the output is reasoning and nothing else: no answer, but reasoning text or reported
   * reasoning tokens. (An empty answer without reasoning is a plain `length` finish.)
   */
  reasoningOnly(usage: Usage | null): boolean {
    return !this.hasAnswer() && (this.reasoning !== '' || (usage?.reasoningTokens ?? 0) > 0);
  }

  /** Usage as reported, or estimated with the tokenizer from what was seen. */
  usageOr(prompt: { estimate(): number }): Usage {
    if (this.usage) return this.usage;
    const promptTokensEstimate = prompt.estimate();
    const args = this.toolCalls.map((t) => t.function.name + t.function.arguments).join('');
    // One bounded budget for the whole output: a huge unreported completion stays cheap to size.
    const estimateTextTokens = new TokenEstimator().measure;
    const reasoningTokens = estimateTextTokens(this.reasoning);
    return {
      promptTokens: promptTokensEstimate,
      completionTokens: estimateTextTokens(this.text) + estimateTextTokens(this.refusal) + estimateTextTokens(args) + reasoningTokens,
      cachedTokens: null,
      cacheWriteTokens: null,
      reasoningTokens: this.reasoning === '' ? null : reasoningTokens,
      source: 'estimated',
    };
  }

  /** Turn a complete result into the same state (non-streamed responses). */
  static fromResult(result: ChatResult): OutputAccumulator {
    const acc = new OutputAccumulator();
    acc.text = result.content ?? '';
    acc.reasoning = result.reasoning ?? '';
    acc.refusal = result.refusal ?? '';
    acc.reasoningDetails.push(...(result.reasoningDetails ?? []));
    acc.toolCalls.push(...result.toolCalls);
    acc.finish = { type: 'finish', finishReason: result.finishReason, nativeFinishReason: result.nativeFinishReason };
    if (result.usage) acc.usage = result.usage;
    return acc;
  }

  /** The parts that replay a complete result as a stream. */
  static resultToParts(result: ChatResult): StreamPart[] {
    const parts: StreamPart[] = [];
    if (result.reasoning) parts.push({ type: 'reasoning', text: result.reasoning });
    if (result.reasoningDetails?.length) parts.push({ type: 'reasoning-details', details: result.reasoningDetails });
    if (result.content) parts.push({ type: 'text', text: result.content });
    if (result.refusal) parts.push({ type: 'refusal', text: result.refusal });
    result.toolCalls.forEach((tc, index) => {
      parts.push({ type: 'tool-call-start', index, id: tc.id, name: tc.function.name });
      parts.push({ type: 'tool-call-delta', index, argumentsDelta: tc.function.arguments });
    });
    parts.push({ type: 'finish', finishReason: result.finishReason, nativeFinishReason: result.nativeFinishReason });
    if (result.usage) parts.push({ type: 'usage', usage: result.usage });
    return parts;
  }
}
