import type { ReasoningDetail, ToolCall, Usage } from '../../core/chat-types.js';
import type { ChatResult } from '../../core/chat-result.js';
import type { StreamPart } from '../../core/stream-part.js';
import { TokenEstimator } from '../../accounting/estimate-tokens.js';

/**
 * Collects what a stream produced: text, reasoning, tool calls, the finish reason and usage.
 * Used for the generation record, for the reasoning-exhausted check and to estimate usage when
 * the upstream reports none.
 */
export class OutputAccumulator {
  text = '';
  reasoning = '';
  refusal = '';
  readonly reasoningDetails: ReasoningDetail[] = [];
  readonly toolCalls: ToolCall[] = [];
  finish: Extract<StreamPart, { type: 'finish' }> | undefined;
  usage: Usage | undefined;

  add(part: StreamPart): void {
    switch (part.type) {
      case 'text':
        this.text += part.text;
        break;
      case 'reasoning':
        this.reasoning += part.text;
        break;
      case 'refusal':
        this.refusal += part.text;
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
    return this.text !== '' || this.refusal !== '' || this.toolCalls.length > 0;
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
