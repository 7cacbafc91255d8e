import type { ChatMessage, ChatRequest, ContentPart, FunctionTool, ReasoningDetail, ToolCall, ToolChoice } from '../../../core/chat-types.js';
import type { MessagesBlock, MessagesRequest } from './messages-request-schema.js';

/** `format` of reasoning details that carry Anthropic thinking signatures. */
export const ANTHROPIC_REASONING_FORMAT = 'anthropic-claude-v1';

/** The internal request of a Messages request, and what it could not carry. */
export interface MessagesToChat {
  chat: ChatRequest;
  /** One sentence per loss (for the generation record of a translated attempt). */
  warnings: string[];
}

type TextPart = Extract<ContentPart, { type: 'text' }>;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Top-level fields with no place in the internal request (listed as warnings when present). */
const UNTRANSLATED_FIELDS = ['context_management', 'container', 'mcp_servers', 'service_tier', 'inference_geo'] as const;

/**
 * Convert a Messages API request to the internal (OpenAI chat) request, for upstreams reached
 * by translation:
 * - `system` (string or text blocks, `cache_control` kept) and `role:"system"` entries → system messages;
 * - user blocks: text; image → `image_url` (base64 as a data: URL, or the URL); PDF document →
 *   `file` (data: URL), text document → text; `tool_result` → a `tool` message (placed before
 *   the user's other blocks, `is_error` as an "Error:" prefix);
 * - assistant blocks: text → content, `tool_use` → `tool_calls` (input as JSON text), signed
 *   `thinking` → `reasoning` + `reasoning_details` (signature kept), `redacted_thinking` →
 *   an encrypted reasoning detail;
 * - custom tools → function tools (`input_schema` → `parameters`); `tool_choice` auto/any/tool/none
 *   → auto/required/function/none, `disable_parallel_tool_use` → `parallel_tool_calls: false`;
 * - `thinking` enabled → `reasoning.max_tokens` = budget, adaptive → `reasoning.enabled`;
 *   `output_config.effort` → `reasoning_effort`, `output_config.format` → `response_format`;
 * - `stop_sequences` → `stop`, `metadata.user_id` → `user`, sampling and gateway fields as they are.
 * Whatever has no internal equivalent (server tools, file ids, document URLs, images inside tool
 * results, `cache_control` outside text, unknown block types and top-level fields) is left out
 * and described in `warnings`.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/openai-sdk
 */
export function convertMessagesToChat(req: MessagesRequest): MessagesToChat {
  const warnings: string[] = [];
  const messages: ChatMessage[] = [];

  if (typeof req.system === 'string') {
    if (req.system !== '') messages.push({ role: 'system', content: req.system });
  } else if (req.system?.length) {
    messages.push({ role: 'system', content: req.system.map((b) => textPart(b)) });
  }

  req.messages.forEach((m, i) => {
    const blocks: MessagesBlock[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    const where = `messages[${i}]`;
    if (m.role === 'system') {
      const parts = blocks.flatMap((b, j) => (b.type === 'text' ? [textPart(b)] : (warnings.push(`${where}.content[${j}]: ${b.type} block in a system message left out`), [])));
      if (parts.length) messages.push({ role: 'system', content: parts });
    } else if (m.role === 'user') {
      convertUser(blocks, where, messages, warnings);
    } else {
      convertAssistant(blocks, where, messages, warnings);
    }
  });

  const chat: ChatRequest = { model: req.model, messages };
  if (req.stream !== undefined) chat.stream = req.stream;
  if (req.max_tokens !== undefined) chat.max_tokens = req.max_tokens;
  if (req.temperature !== undefined) chat.temperature = req.temperature;
  if (req.top_p !== undefined) chat.top_p = req.top_p;
  if (req.top_k !== undefined) chat.top_k = req.top_k;
  if (req.stop_sequences?.length) chat.stop = req.stop_sequences;
  if (typeof req.metadata?.user_id === 'string') chat.user = req.metadata.user_id;

  const tools: FunctionTool[] = [];
  for (const t of req.tools ?? []) {
    if (t.type !== undefined && t.type !== 'custom') {
      warnings.push(`tool ${JSON.stringify(t.name)} (${t.type}) left out: server tools run only on Anthropic`);
      continue;
    }
    const fn: FunctionTool['function'] = { name: t.name, parameters: t.input_schema as Record<string, unknown> };
    if (t.description !== undefined) fn.description = t.description;
    if (t.strict !== undefined) fn.strict = t.strict;
    tools.push({ type: 'function', function: fn });
  }
  if (tools.length) chat.tools = tools;
  if (req.tool_choice) {
    const choice = convertToolChoice(req.tool_choice);
    if (choice !== 'none' && !tools.length) warnings.push('tool_choice left out: no custom tool to choose');
    else chat.tool_choice = choice;
    if ('disable_parallel_tool_use' in req.tool_choice && req.tool_choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
  }

  if (req.thinking?.type === 'enabled') chat.reasoning = { max_tokens: req.thinking.budget_tokens };
  else if (req.thinking?.type === 'adaptive') chat.reasoning = { enabled: true };
  const outputConfig = req.output_config as { effort?: unknown; format?: { type?: unknown; schema?: unknown } } | undefined;
  if (outputConfig && typeof outputConfig === 'object') {
    const effort = outputConfig.effort;
    if (effort === 'low' || effort === 'medium' || effort === 'high' || effort === 'max') chat.reasoning_effort = effort;
    else if (effort !== undefined) warnings.push(`output_config.effort ${JSON.stringify(effort)} left out`);
    const format = outputConfig.format;
    if (format?.type === 'json_schema' && format.schema && typeof format.schema === 'object') {
      chat.response_format = { type: 'json_schema', json_schema: { name: 'response', schema: format.schema as Record<string, unknown>, strict: true } };
    } else if (format !== undefined) warnings.push('output_config.format left out: only json_schema translates');
  }
  for (const field of UNTRANSLATED_FIELDS) if (req[field] !== undefined) warnings.push(`${field} left out: it has no equivalent outside Anthropic`);

  if (req.models) chat.models = req.models;
  if (req.provider) chat.provider = req.provider;
  if (req.op) chat.op = req.op;
  return { chat, warnings };
}

function textPart(b: Record<string, unknown>): TextPart {
  const part: TextPart = { type: 'text', text: str(b.text) };
  const cc = b.cache_control as TextPart['cache_control'] | null | undefined;
  if (cc) part.cache_control = cc;
  return part;
}

function convertToolChoice(choice: NonNullable<MessagesRequest['tool_choice']>): ToolChoice {
  switch (choice.type) {
    case 'auto':
      return 'auto';
    case 'any':
      return 'required';
    case 'tool':
      return { type: 'function', function: { name: choice.name } };
    case 'none':
      return 'none';
  }
}

/** A user block as an internal content part, or null (with a warning) when it has none. */
function userPart(b: MessagesBlock, where: string, warnings: string[]): ContentPart | null {
  if (b.cache_control && b.type !== 'text') warnings.push(`${where}: cache_control on a ${b.type} block left out`);
  const source = (b.source ?? {}) as Record<string, unknown>;
  switch (b.type) {
    case 'text':
      return textPart(b);
    case 'image':
      if (source.type === 'base64') return { type: 'image_url', image_url: { url: `data:${str(source.media_type)};base64,${str(source.data)}` } };
      if (source.type === 'url') return { type: 'image_url', image_url: { url: str(source.url) } };
      warnings.push(`${where}: image with source ${JSON.stringify(source.type)} left out (file ids exist only on Anthropic)`);
      return null;
    case 'document':
      if (source.type === 'base64') return { type: 'file', file: { filename: typeof b.title === 'string' ? b.title : 'document.pdf', file_data: `data:application/pdf;base64,${str(source.data)}` } };
      if (source.type === 'text') return { type: 'text', text: str(source.data) };
      if (source.type === 'content' && typeof source.content === 'string') return { type: 'text', text: source.content };
      warnings.push(`${where}: document with source ${JSON.stringify(source.type)} left out`);
      return null;
    default:
      warnings.push(`${where}: ${b.type} block left out: no equivalent outside Anthropic`);
      return null;
  }
}

function convertUser(blocks: MessagesBlock[], where: string, out: ChatMessage[], warnings: string[]): void {
  const parts: ContentPart[] = [];
  blocks.forEach((b, j) => {
    const at = `${where}.content[${j}]`;
    if (b.type !== 'tool_result') {
      const part = userPart(b, at, warnings);
      if (part) parts.push(part);
      return;
    }
    const raw = b.content;
    let text = '';
    if (typeof raw === 'string') text = raw;
    else if (Array.isArray(raw)) {
      const texts: string[] = [];
      (raw as MessagesBlock[]).forEach((c, k) => {
        if (c.type === 'text') texts.push(str(c.text));
        else warnings.push(`${at}.content[${k}]: ${c.type} inside a tool result left out (tool messages carry text only)`);
      });
      text = texts.join('\n');
    }
    if (b.is_error === true) text = `Error: ${text}`;
    out.push({ role: 'tool', tool_call_id: str(b.tool_use_id), content: text });
  });
  if (parts.length === 0) return;
  out.push({ role: 'user', content: parts.every((p) => p.type === 'text' && !p.cache_control) && parts.length === 1 ? (parts[0] as TextPart).text : parts });
}

function convertAssistant(blocks: MessagesBlock[], where: string, out: ChatMessage[], warnings: string[]): void {
  const texts: TextPart[] = [];
  const toolCalls: ToolCall[] = [];
  let reasoning = '';
  const details: ReasoningDetail[] = [];
  blocks.forEach((b, j) => {
    switch (b.type) {
      case 'text':
        texts.push(textPart(b));
        return;
      case 'tool_use':
        toolCalls.push({ id: str(b.id), type: 'function', function: { name: str(b.name), arguments: JSON.stringify(b.input ?? {}) } });
        return;
      case 'thinking':
        reasoning += str(b.thinking);
        if (str(b.signature) !== '') details.push({ type: 'reasoning.text', text: str(b.thinking), signature: str(b.signature), format: ANTHROPIC_REASONING_FORMAT });
        return;
      case 'redacted_thinking':
        details.push({ type: 'reasoning.encrypted', data: str(b.data), format: ANTHROPIC_REASONING_FORMAT });
        return;
      default:
        warnings.push(`${where}.content[${j}]: ${b.type} block left out: no equivalent outside Anthropic`);
    }
  });
  const msg: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant' };
  msg.content = texts.length === 0 ? null : texts.some((t) => t.cache_control) ? texts : texts.map((t) => t.text).join('');
  if (toolCalls.length) msg.tool_calls = toolCalls;
  if (reasoning !== '') msg.reasoning = reasoning;
  if (details.length) msg.reasoning_details = details;
  out.push(msg);
}
