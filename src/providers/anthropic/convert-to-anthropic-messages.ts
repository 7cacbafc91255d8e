import type { ChatMessage, ContentPart, ReasoningDetail, ToolCall } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type {
  AnthropicAssistantBlock,
  AnthropicCacheControl,
  AnthropicMessage,
  AnthropicTextBlock,
  AnthropicToolResultBlock,
  AnthropicUserBlock,
} from './anthropic-wire-types.js';
import { convertFile, convertImageUrl } from './convert-anthropic-media.js';

/** The `format` of reasoning details this adapter produces and accepts back. */
export const ANTHROPIC_REASONING_FORMAT = 'anthropic-claude-v1';

/** The prompt of an Anthropic request: hoisted system blocks and alternating turns. */
export interface AnthropicPrompt {
  system: AnthropicTextBlock[];
  messages: AnthropicMessage[];
  /** Whether the history holds tool_use or tool_result blocks (Anthropic then needs `tools`). */
  hasToolBlocks: boolean;
}

/** Anthropic tool ids must match `^[a-zA-Z0-9_-]+$`; other characters become `_` (deterministic, so calls and results still pair). */
export function toAnthropicToolId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/** A text block, or nothing for empty / whitespace-only text (Anthropic rejects those). */
function textBlock(text: string, cacheControl?: AnthropicCacheControl): AnthropicTextBlock[] {
  if (text.trim() === '') return [];
  return [cacheControl ? { type: 'text', text, cache_control: cacheControl } : { type: 'text', text }];
}

/** Text-only content (system, developer, tool, assistant): a string or text parts. */
function textBlocks(content: string | ContentPart[] | null | undefined): AnthropicTextBlock[] {
  if (typeof content === 'string') return textBlock(content);
  if (!Array.isArray(content)) return [];
  return content.flatMap((part) => {
    switch (part.type) {
      case 'text':
        return textBlock(part.text, part.cache_control);
      case 'refusal':
        return textBlock(part.refusal);
      case 'image_url':
      case 'input_audio':
      case 'file':
        return [];
    }
  });
}

/** User content: text, images (data and http URLs), PDF and text files. */
function userBlocks(content: string | ContentPart[], param: string): AnthropicUserBlock[] {
  if (typeof content === 'string') return textBlock(content);
  return content.flatMap((part, j): AnthropicUserBlock[] => {
    const at = `${param}[${j}]`;
    switch (part.type) {
      case 'text':
        return textBlock(part.text, part.cache_control);
      case 'image_url':
        return [convertImageUrl(part.image_url.url, at)];
      case 'file':
        return [convertFile(part.file, at)];
      case 'input_audio':
        throw new GatewayError('invalid_request', `${at}: audio input is not supported by Anthropic models`, { param: at });
      case 'refusal':
        return textBlock(part.refusal);
    }
  });
}

/**
 * Echoed reasoning state → thinking blocks: `reasoning.text` with a signature → `thinking`,
 * `reasoning.encrypted` with data → `redacted_thinking`. Details of another provider's format
 * and unsigned text are skipped (Anthropic would reject them).
 */
function thinkingBlocks(details: ReasoningDetail[] | undefined): AnthropicAssistantBlock[] {
  const blocks: AnthropicAssistantBlock[] = [];
  for (const d of details ?? []) {
    if (d.format !== undefined && d.format !== ANTHROPIC_REASONING_FORMAT) continue;
    switch (d.type) {
      case 'reasoning.text':
        if (typeof d.signature === 'string' && d.signature !== '') blocks.push({ type: 'thinking', thinking: d.text ?? '', signature: d.signature });
        break;
      case 'reasoning.encrypted':
        if (typeof d.data === 'string' && d.data !== '') blocks.push({ type: 'redacted_thinking', data: d.data });
        break;
      case 'reasoning.summary':
        break;
    }
  }
  return blocks;
}

/** `arguments` JSON text → the `tool_use` input object (`""` reads as `{}`). */
function toolInput(call: ToolCall, param: string): Record<string, unknown> {
  const text = call.function.arguments.trim();
  if (text === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request', `${param}: is not valid JSON`, { param });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GatewayError('invalid_request', `${param}: must be a JSON object`, { param });
  }
  return parsed as Record<string, unknown>;
}

/** Assistant turn: signed thinking first, then text, then tool_use blocks. */
function assistantBlocks(m: Extract<ChatMessage, { role: 'assistant' }>, i: number): AnthropicAssistantBlock[] {
  const blocks = [...thinkingBlocks(m.reasoning_details), ...textBlocks(m.content)];
  (m.tool_calls ?? []).forEach((call, j) => {
    blocks.push({ type: 'tool_use', id: toAnthropicToolId(call.id), name: call.function.name, input: toolInput(call, `messages[${i}].tool_calls[${j}].function.arguments`) });
  });
  return blocks;
}

function toolResult(m: Extract<ChatMessage, { role: 'tool' }>): AnthropicToolResultBlock {
  const block: AnthropicToolResultBlock = { type: 'tool_result', tool_use_id: toAnthropicToolId(m.tool_call_id) };
  if (typeof m.content === 'string') {
    if (m.content !== '') block.content = m.content;
  } else {
    const text = textBlocks(m.content);
    if (text.length > 0) block.content = text;
  }
  return block;
}

/** Trim trailing whitespace of a final assistant turn (a prefill); Anthropic rejects it. */
function trimPrefill(messages: AnthropicMessage[]): void {
  const last = messages.at(-1);
  if (!last || last.role !== 'assistant') return;
  const block = last.content.at(-1);
  if (block?.type !== 'text') return;
  block.text = block.text.trimEnd();
  if (block.text === '') last.content.pop();
  if (last.content.length === 0) messages.pop();
}

/**
 * Convert OpenAI chat messages to an Anthropic prompt:
 * - system and developer messages, wherever they are, → `system` text blocks, in order;
 * - user content → text / image / document blocks; `tool` messages → `tool_result` blocks in
 *   the following user turn (all results of one assistant turn in one user message, first);
 * - assistant messages → echoed `thinking` / `redacted_thinking` blocks (from
 *   `reasoning_details`), then text, then `tool_use` blocks (empty or null content adds nothing);
 * - consecutive turns of one role are merged into one message (blocks concatenated);
 * - empty and whitespace-only text is dropped; `cache_control` on text parts is kept.
 * @throws GatewayError `invalid_request` with `param` for content Anthropic cannot take.
 * @see https://docs.anthropic.com/en/api/messages#body-messages
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#handling-tool-use-and-tool-result-content-blocks
 */
export function convertToAnthropicMessages(input: ChatMessage[]): AnthropicPrompt {
  const system: AnthropicTextBlock[] = [];
  const messages: AnthropicMessage[] = [];
  let hasToolBlocks = false;
  const append = (role: 'user' | 'assistant', blocks: AnthropicUserBlock[] | AnthropicAssistantBlock[]): void => {
    if (blocks.length === 0) return;
    const last = messages.at(-1);
    if (last && last.role === role) (last.content as unknown[]).push(...blocks);
    else messages.push({ role, content: blocks } as AnthropicMessage);
  };
  input.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textBlocks(m.content));
        break;
      case 'user':
        append('user', userBlocks(m.content, `messages[${i}].content`));
        break;
      case 'assistant': {
        if (m.tool_calls?.length) hasToolBlocks = true;
        append('assistant', assistantBlocks(m, i));
        break;
      }
      case 'tool':
        hasToolBlocks = true;
        append('user', [toolResult(m)]);
        break;
    }
  });
  for (const msg of messages) {
    // tool_result blocks must come first in their user message.
    if (msg.role === 'user') msg.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
  }
  trimPrefill(messages);
  return { system, messages, hasToolBlocks };
}
