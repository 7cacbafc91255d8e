import type { ReasoningDetail, ToolCall } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { newToolCallId } from '../../util/ids.js';
import type { ChatResult } from '../../core/chat-result.js';
import { inBandAnthropicError } from './anthropic-error.js';
import { JSON_RESPONSE_TOOL_NAME } from './anthropic-json-response-tool.js';
import type { AnthropicContentBlockWire, AnthropicResponseWire } from './anthropic-wire-types.js';
import { convertAnthropicUsage } from './convert-anthropic-usage.js';
import { ANTHROPIC_REASONING_FORMAT } from './convert-to-anthropic-messages.js';
import { mapAnthropicFinishReason } from './map-anthropic-finish-reason.js';

/** A `tool_use` input as OpenAI `arguments` JSON text (`"{}"` for a missing or empty input). */
export function toolInputJson(input: unknown): string {
  if (typeof input === 'string') return input.trim() === '' ? '{}' : input;
  if (input === null || input === undefined) return '{}';
  return JSON.stringify(input);
}

/** Block types this converter reads; every other type (server tools and their results, web search, code execution, MCP, compaction, fallback …) is skipped. */
type ReadBlockType = 'text' | 'thinking' | 'redacted_thinking' | 'tool_use';

const READ: ReadonlySet<string> = new Set<ReadBlockType>(['text', 'thinking', 'redacted_thinking', 'tool_use']);

/**
 * Convert a complete Messages API response to a {@link ChatResult}:
 * - `text` blocks → `content` (joined; null when there is none);
 * - `thinking` → `reasoning` (joined) and, when signed, a `reasoning_details` entry
 *   `{type:"reasoning.text", text, signature, format:"anthropic-claude-v1"}` to echo back;
 *   `redacted_thinking` → `{type:"reasoning.encrypted", data, format}`;
 * - `tool_use` → tool calls (arguments = the input as JSON text, `"{}"` when empty), except the
 *   gateway's JSON-response tool, whose input JSON becomes the whole content (text blocks
 *   beside it are dropped, so the content stays valid JSON; finish reason `stop`);
 * - server-tool blocks and unknown block types are ignored;
 * - `stop_reason` per {@link mapAnthropicFinishReason} (the raw value kept as native); usage per
 *   {@link convertAnthropicUsage}.
 * @throws GatewayError for an error body, or a body that is not a message.
 * @see https://docs.anthropic.com/en/api/messages#response-content
 */
export function convertAnthropicResponse(providerId: string, body: unknown): ChatResult {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: response is not a JSON object`, { metadata: { provider: providerId } });
  }
  const res = body as AnthropicResponseWire;
  if (res.type === 'error' || (res.error && typeof res.error === 'object')) throw inBandAnthropicError(providerId, res.error);
  if (!Array.isArray(res.content)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: response has no content array`, { metadata: { provider: providerId } });
  }
  let content: string | null = null;
  let reasoning: string | null = null;
  const reasoningDetails: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  /** The JSON-response tool's input; when present it is the whole content. */
  let jsonText: string | null = null;
  for (const block of res.content as AnthropicContentBlockWire[]) {
    if (!block || typeof block.type !== 'string' || !READ.has(block.type)) continue;
    const type = block.type as ReadBlockType;
    switch (type) {
      case 'text':
        content = (content ?? '') + (typeof block.text === 'string' ? block.text : '');
        break;
      case 'thinking': {
        const text = typeof block.thinking === 'string' ? block.thinking : '';
        reasoning = (reasoning ?? '') + text;
        if (typeof block.signature === 'string' && block.signature !== '') {
          reasoningDetails.push({ type: 'reasoning.text', text, signature: block.signature, format: ANTHROPIC_REASONING_FORMAT });
        }
        break;
      }
      case 'redacted_thinking':
        if (typeof block.data === 'string' && block.data !== '') reasoningDetails.push({ type: 'reasoning.encrypted', data: block.data, format: ANTHROPIC_REASONING_FORMAT });
        break;
      case 'tool_use':
        if (block.name === JSON_RESPONSE_TOOL_NAME) {
          jsonText = (jsonText ?? '') + toolInputJson(block.input);
        } else {
          toolCalls.push({ id: typeof block.id === 'string' && block.id !== '' ? block.id : newToolCallId(), type: 'function', function: { name: String(block.name ?? ''), arguments: toolInputJson(block.input) } });
        }
        break;
      default: {
        const unreachable: never = type;
        return unreachable;
      }
    }
  }
  const jsonTool = jsonText !== null;
  return {
    content: jsonTool ? jsonText : content,
    reasoning: reasoning === '' ? null : reasoning,
    reasoningDetails,
    refusal: null,
    toolCalls,
    finishReason: mapAnthropicFinishReason(res.stop_reason, jsonTool && toolCalls.length === 0),
    nativeFinishReason: res.stop_reason ?? null,
    usage: convertAnthropicUsage(res.usage),
  };
}
