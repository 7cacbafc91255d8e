import type { ReasoningDetail, ToolCall } from '../../core/chat-types.js';
import type { ChatResult } from '../../core/chat-result.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { newToolCallId } from '../../util/ids.js';
import { toolInputJson } from '../anthropic/convert-anthropic-response.js';
import type { BedrockContentBlockWire, BedrockConverseResponseWire } from './bedrock-wire-types.js';
import { convertBedrockUsage } from './convert-bedrock-usage.js';
import { BEDROCK_REASONING_FORMAT } from './convert-to-bedrock-request.js';
import { mapBedrockFinishReason } from './map-bedrock-finish-reason.js';

/** What a Converse answer says beyond the generation, for the record's `detail.provider_metadata`; null when nothing. */
export function bedrockResultMetadata(res: { metrics?: unknown; additionalModelResponseFields?: unknown; stopReason?: unknown }): Record<string, unknown> | null {
  const meta: Record<string, unknown> = {};
  const latency = (res.metrics as { latencyMs?: unknown } | null | undefined)?.latencyMs;
  if (typeof latency === 'number') meta.bedrock_latency_ms = latency;
  if (res.stopReason === 'guardrail_intervened') meta.bedrock_guardrail_intervened = true;
  return Object.keys(meta).length > 0 ? meta : null;
}

/**
 * Convert a Converse answer to a {@link ChatResult}:
 * - `text` blocks → `content` (joined; null when there is none);
 * - `reasoningContent.reasoningText` → `reasoning` (joined) and, when signed, a reasoning detail
 *   `{type:"reasoning.text", text, signature, format:"amazon-bedrock-converse-v1"}` to echo back;
 *   `redactedContent` → `{type:"reasoning.encrypted", data}`;
 * - `toolUse` → tool calls (arguments = the input object as JSON text, `"{}"` when empty);
 * - other blocks (images, citations, guard content, server tools) are ignored;
 * - `stopReason` per {@link mapBedrockFinishReason} (the raw value kept as native); usage per
 *   {@link convertBedrockUsage}; `metrics.latencyMs` into the record's provider metadata.
 * @throws GatewayError `upstream_invalid_response` for a body that is not a Converse answer.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_ResponseSyntax
 */
export function convertBedrockResponse(providerId: string, body: unknown): ChatResult {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('upstream_invalid_response', `${providerId}: response is not a JSON object`, { metadata: { provider: providerId } });
  }
  const res = body as BedrockConverseResponseWire;
  const blocks = res.output?.message?.content;
  if (!Array.isArray(blocks)) {
    const said = typeof res.message === 'string' ? `: ${res.message}` : '';
    throw new GatewayError('upstream_invalid_response', `${providerId}: response has no output.message.content array${said}`, { metadata: { provider: providerId } });
  }
  let content: string | null = null;
  let reasoning: string | null = null;
  const reasoningDetails: ReasoningDetail[] = [];
  const toolCalls: ToolCall[] = [];
  for (const block of blocks as BedrockContentBlockWire[]) {
    if (!block || typeof block !== 'object') continue;
    if (typeof block.text === 'string') {
      content = (content ?? '') + block.text;
    } else if (block.toolUse && typeof block.toolUse === 'object') {
      const t = block.toolUse;
      if (t.type === 'server_tool_use') continue;
      toolCalls.push({ id: typeof t.toolUseId === 'string' && t.toolUseId !== '' ? t.toolUseId : newToolCallId(), type: 'function', function: { name: String(t.name ?? ''), arguments: toolInputJson(t.input) } });
    } else if (block.reasoningContent && typeof block.reasoningContent === 'object') {
      const r = block.reasoningContent;
      if (r.reasoningText) {
        const text = typeof r.reasoningText.text === 'string' ? r.reasoningText.text : '';
        reasoning = (reasoning ?? '') + text;
        if (typeof r.reasoningText.signature === 'string' && r.reasoningText.signature !== '') {
          reasoningDetails.push({ type: 'reasoning.text', text, signature: r.reasoningText.signature, format: BEDROCK_REASONING_FORMAT });
        }
      } else if (typeof r.redactedContent === 'string' && r.redactedContent !== '') {
        reasoningDetails.push({ type: 'reasoning.encrypted', data: r.redactedContent, format: BEDROCK_REASONING_FORMAT });
      }
    }
  }
  const result: ChatResult = {
    content,
    reasoning: reasoning === '' ? null : reasoning,
    reasoningDetails,
    refusal: null,
    toolCalls,
    finishReason: mapBedrockFinishReason(res.stopReason),
    nativeFinishReason: res.stopReason ?? null,
    usage: convertBedrockUsage(res.usage),
  };
  const meta = bedrockResultMetadata(res);
  if (meta) result.providerMetadata = meta;
  return result;
}
