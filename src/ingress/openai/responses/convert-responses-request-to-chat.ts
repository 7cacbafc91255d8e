import type { ChatMessage, ChatRequest, ContentPart, ReasoningDetail, ToolCall } from '../../../core/chat-types.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import { decodeReasoningState } from './reasoning-state.js';
import { functionToolsOf, hostedToolsOf, type InputItem, type ResponsesRequest } from './response-request-schema.js';

/**
 * A Responses request as the internal chat request: `instructions` become the first system
 * message, input items become messages in order (consecutive reasoning, assistant text and
 * function calls fold into one assistant message; each function output becomes a tool message),
 * function tools, `tool_choice`, `text.format` as `response_format`, `reasoning.effort`,
 * `max_output_tokens` as `max_completion_tokens`. Not carried: `metadata` (echoed in the response
 * only), `reasoning.summary` (the gateway reports the reasoning it gets), hosted tools and the
 * fields listed by {@link responsesTranslationWarnings}.
 * @throws GatewayError `unsupported_parameter` for file ids (the gateway has no files API).
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */
export function responsesToChat(req: ResponsesRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  if (req.instructions) messages.push({ role: 'system', content: req.instructions });
  if (typeof req.input === 'string') messages.push({ role: 'user', content: req.input });
  else messages.push(...itemsToMessages(req.input));

  const chat: ChatRequest = { model: req.model, messages };
  if (req.stream) chat.stream = true;
  if (req.max_output_tokens != null) chat.max_completion_tokens = req.max_output_tokens;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (req.parallel_tool_calls != null) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.user !== undefined) chat.user = req.user;
  const functions = functionToolsOf(req.tools);
  if (functions.length) {
    chat.tools = functions.map(({ tool: t }) => ({
      type: 'function',
      function: { name: t.name, ...(t.description ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters } : {}), ...(t.strict != null ? { strict: t.strict } : {}) },
    }));
  }
  if (req.tool_choice !== undefined) {
    chat.tool_choice = typeof req.tool_choice === 'string' ? req.tool_choice : { type: 'function', function: { name: req.tool_choice.name } };
  }
  const format = req.text?.format;
  if (format?.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (format?.type === 'json_schema') {
    chat.response_format = {
      type: 'json_schema',
      json_schema: { name: format.name, schema: format.schema, ...(format.description ? { description: format.description } : {}), ...(format.strict != null ? { strict: format.strict } : {}) },
    };
  }
  const effort = req.reasoning?.effort;
  if (effort) chat.reasoning = { effort };
  if (req.models) chat.models = req.models;
  if (req.provider) chat.provider = req.provider;
  if (req.op) chat.op = req.op;
  return chat;
}

type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/** Input items as chat messages, in order. */
export function itemsToMessages(items: InputItem[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  /** The assistant turn being assembled from consecutive assistant-side items. */
  let turn: AssistantMessage | null = null;
  const assistant = (): AssistantMessage => {
    if (!turn) {
      turn = { role: 'assistant', content: null };
      out.push(turn);
    }
    return turn;
  };
  items.forEach((item, i) => {
    switch (item.type) {
      case 'reasoning': {
        const t = assistant();
        const text = [...item.summary.map((s) => s.text), ...(item.content ?? []).map((c) => c.text)].join('\n\n');
        if (text) t.reasoning = (t.reasoning ? `${t.reasoning}\n\n` : '') + text;
        const details: ReasoningDetail[] = item.encrypted_content ? decodeReasoningState(item.encrypted_content) : [];
        if (details.length) t.reasoning_details = [...(t.reasoning_details ?? []), ...details];
        return;
      }
      case 'function_call': {
        const t = assistant();
        const call: ToolCall = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
        t.tool_calls = [...(t.tool_calls ?? []), call];
        return;
      }
      case 'item_reference':
        // prepareResponsesRequest replaces references by the stored items before conversion.
        throw new GatewayError('invalid_request', `input[${i}]: unresolved item_reference ${JSON.stringify(item.id)}`, { param: `input[${i}]` });
      case 'function_call_output':
        turn = null;
        out.push({ role: 'tool', tool_call_id: item.call_id, content: typeof item.output === 'string' ? item.output : item.output.map((p, j) => toContentPart(p, `input[${i}].output[${j}]`)) });
        return;
      case 'message':
      case undefined:
        if (item.role === 'assistant') {
          const t = assistant();
          // An assistant message after the turn's tool calls starts a new turn.
          if (t.tool_calls?.length) {
            turn = null;
            return void addAssistantContent(assistant(), item.content);
          }
          return void addAssistantContent(t, item.content);
        }
        turn = null;
        out.push({ role: item.role, content: typeof item.content === 'string' ? item.content : item.content.map((p, j) => toContentPart(p, `input[${i}].content[${j}]`)) } as ChatMessage);
        return;
    }
  });
  return out;
}

function addAssistantContent(t: AssistantMessage, content: Extract<InputItem, { role: string }>['content']): void {
  let text = typeof content === 'string' ? content : '';
  if (Array.isArray(content)) {
    for (const p of content) {
      if (p.type === 'refusal') t.refusal = (t.refusal ?? '') + p.refusal;
      else if ('text' in p && typeof p.text === 'string') text += p.text;
    }
  }
  if (text) t.content = (typeof t.content === 'string' ? t.content : '') + text;
}

type InputPart = Extract<Extract<InputItem, { role: string }>['content'], unknown[]>[number];

function toContentPart(p: InputPart, param: string): ContentPart {
  switch (p.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: p.text };
    case 'refusal':
      return { type: 'text', text: p.refusal };
    case 'input_image':
      if (!p.image_url) throw new GatewayError('unsupported_parameter', `${param}.file_id: file ids are not supported; send image_url (an https or data: URL)`, { param: `${param}.file_id` });
      return { type: 'image_url', image_url: { url: p.image_url, ...(p.detail ? { detail: p.detail } : {}) } };
    case 'input_file':
      if (p.file_data === undefined) throw new GatewayError('unsupported_parameter', `${param}: only inline files (file_data) are supported`, { param });
      return { type: 'file', file: { file_data: p.file_data, ...(p.filename ? { filename: p.filename } : {}) } };
  }
}

/** Request fields a translated call does not carry (read by the gateway, or echoed only). */
const CARRIED = new Set([
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'text', 'reasoning', 'max_output_tokens', 'temperature', 'top_p', 'metadata',
  'parallel_tool_calls', 'stream', 'store', 'previous_response_id', 'background', 'user', 'models', 'provider', 'op',
]);

/**
 * What translating a Responses request through the internal chat request loses, for the
 * record's warnings: hosted tools (dropped), other request fields the chat format has no place
 * for (e.g. `include`, `prompt_cache_key`, `truncation`, `service_tier`), `text.verbosity`.
 */
export function responsesTranslationWarnings(req: ResponsesRequest): string[] {
  const out: string[] = [];
  const hosted = hostedToolsOf(req.tools);
  if (hosted.length) out.push(`hosted tools dropped (translation carries function tools only): ${hosted.join(', ')}`);
  const fields = Object.keys(req).filter((k) => !CARRIED.has(k) && (req as Record<string, unknown>)[k] !== undefined);
  if (req.text?.verbosity) fields.push('text.verbosity');
  if (fields.length) out.push(`Responses fields not translated: ${fields.join(', ')}`);
  return out;
}
