import type { ChatMessage, ChatRequest, ContentPart, FunctionTool, ReasoningDetail, ToolCall } from '../../../core/chat-types.js';
import { GEMINI_REASONING_FORMAT } from '../../../providers/gemini/gemini-part-reader.js';
import type { GeminiApiContent, GeminiApiPart, GeminiApiRequest } from './gemini-request-schema.js';

/** The internal request of a Gemini request, and what it could not carry. */
export interface GeminiToChat {
  chat: ChatRequest;
  /** One sentence per loss (for the generation record of a translated attempt). */
  warnings: string[];
}

/** Members of the request the conversion reads; any other is a loss when translated. */
const KNOWN = new Set(['model', 'stream', 'alt', 'contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings', 'cachedContent', 'models', 'provider', 'op']);
const KNOWN_CONFIG = new Set(['temperature', 'topP', 'topK', 'candidateCount', 'maxOutputTokens', 'stopSequences', 'presencePenalty', 'frequencyPenalty', 'seed', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'thinkingConfig']);

/** Google's tools that only Google runs (every member of a `Tool` but `functionDeclarations`). */
export function builtInTools(req: Pick<GeminiApiRequest, 'tools'>): Array<{ index: number; name: string }> {
  const out: Array<{ index: number; name: string }> = [];
  (req.tools ?? []).forEach((t, index) => {
    for (const name of Object.keys(t)) if (name !== 'functionDeclarations') out.push({ index, name });
  });
  return out;
}

/**
 * Google's OpenAPI-3.0 schema subset (`responseSchema`, function `parameters`) as JSON Schema:
 * `type` names in lower case (`OBJECT` → `object`), `nullable: true` → a `null` type beside it;
 * every other keyword as it is.
 * @see https://ai.google.dev/api/caching#Schema
 */
export function googleSchemaToJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(googleSchemaToJsonSchema);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema as Record<string, unknown>)) {
    if (k === 'type' && typeof v === 'string') out.type = v.toLowerCase();
    else if (k === 'nullable') continue;
    else if (k === 'properties' && v && typeof v === 'object') out.properties = Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([n, s]) => [n, googleSchemaToJsonSchema(s)]));
    else if (k === 'items' || k === 'anyOf' || k === 'oneOf' || k === 'allOf' || k === 'not' || k === 'additionalProperties') out[k] = googleSchemaToJsonSchema(v);
    else out[k] = v;
  }
  if ((schema as Record<string, unknown>).nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  return out;
}

const partText = (parts: readonly GeminiApiPart[]): string => parts.map((p) => (typeof p.text === 'string' && p.thought !== true ? p.text : '')).filter((t) => t !== '').join('\n');

/** Audio MIME types → the internal `input_audio.format`. */
const AUDIO_FORMATS: Record<string, string> = { 'audio/wav': 'wav', 'audio/x-wav': 'wav', 'audio/mp3': 'mp3', 'audio/mpeg': 'mp3', 'audio/flac': 'flac', 'audio/ogg': 'ogg', 'audio/aac': 'aac' };

/** A user part (not a function response) as an internal content part, or null with a warning. */
function userPart(p: GeminiApiPart, where: string, warnings: string[]): ContentPart | null {
  if (typeof p.text === 'string') return { type: 'text', text: p.text };
  if (p.inlineData) {
    const { mimeType, data } = p.inlineData;
    if (mimeType.startsWith('image/')) return { type: 'image_url', image_url: { url: `data:${mimeType};base64,${data}` } };
    const audio = AUDIO_FORMATS[mimeType];
    if (audio) return { type: 'input_audio', input_audio: { data, format: audio } };
    return { type: 'file', file: { filename: mimeType === 'application/pdf' ? 'document.pdf' : 'file', file_data: `data:${mimeType};base64,${data}` } };
  }
  if (p.fileData) {
    if ((p.fileData.mimeType ?? '').startsWith('image/') && /^https?:\/\//.test(p.fileData.fileUri)) return { type: 'image_url', image_url: { url: p.fileData.fileUri } };
    warnings.push(`${where}: fileData ${JSON.stringify(p.fileData.fileUri)} left out: only image URLs translate outside Gemini`);
    return null;
  }
  const kind = Object.keys(p).find((k) => k !== 'thoughtSignature' && k !== 'thought') ?? 'empty';
  warnings.push(`${where}: ${kind} part left out: no equivalent outside Gemini`);
  return null;
}

/**
 * Convert a Gemini `GenerateContentRequest` to the internal (OpenAI chat) request, for
 * upstreams reached by translation:
 * - `systemInstruction` → a system message (its text parts);
 * - `user` contents: text, `inlineData` (images → `image_url` data URLs, audio → `input_audio`,
 *   other types such as PDF → `file`), `fileData` with an image URL → `image_url`;
 *   `functionResponse` → a `tool` message (its `response` as JSON text), whose `tool_call_id`
 *   is the part's `id`, else the id of the earlier `functionCall` of the same name in order;
 * - `model` contents: text → content, `thought: true` text → reasoning, `functionCall` →
 *   `tool_calls` (args as JSON text; id = the part's `id`, else a stable `call_<turn>_<n>`),
 *   `thoughtSignature` → a `google-gemini-v1` reasoning detail (with the call's id on a call);
 * - `tools[].functionDeclarations` → function tools (`parametersJsonSchema` as is, else
 *   `parameters` from Google's schema); `toolConfig.functionCallingConfig` AUTO/ANY/NONE →
 *   auto/required/none, ANY with one allowed name → that function;
 * - `generationConfig`: temperature, topP, topK, maxOutputTokens → max_tokens, stopSequences
 *   → stop, penalties, seed; `responseMimeType: application/json` → `json_object`, with
 *   `responseJsonSchema` or `responseSchema` → `json_schema`; `thinkingConfig`: a budget →
 *   `reasoning.max_tokens` (0 turns thinking off, −1 the model's default), a level →
 *   `reasoning.effort`, `includeThoughts` not true → `reasoning.exclude`.
 * What has no internal equivalent (safety settings, cached content, Google's built-in tools,
 * other parts and members) is left out and described in `warnings`.
 * @see https://ai.google.dev/api/generate-content#request-body
 */
export function convertGeminiToChat(req: GeminiApiRequest): GeminiToChat {
  const warnings: string[] = [];
  const messages: ChatMessage[] = [];
  if (typeof req.systemInstruction === 'string') {
    if (req.systemInstruction !== '') messages.push({ role: 'system', content: req.systemInstruction });
  } else if (req.systemInstruction) {
    const text = partText(req.systemInstruction.parts);
    if (text !== '') messages.push({ role: 'system', content: text });
  }
  /** Ids of the model's calls not answered yet, by function name, in order. */
  const open = new Map<string, string[]>();
  req.contents.forEach((c, i) => (c.role === 'model' ? convertModel(c, i, messages, open) : convertUser(c, i, messages, open, warnings)));

  const chat: ChatRequest = { model: req.model, messages };
  if (req.stream) chat.stream = true;
  const g = req.generationConfig;
  if (g) {
    if (g.temperature !== undefined) chat.temperature = g.temperature;
    if (g.topP !== undefined) chat.top_p = g.topP;
    if (g.topK !== undefined) chat.top_k = g.topK;
    if (g.maxOutputTokens !== undefined) chat.max_tokens = g.maxOutputTokens;
    if (g.stopSequences?.length) chat.stop = g.stopSequences;
    if (g.presencePenalty !== undefined) chat.presence_penalty = g.presencePenalty;
    if (g.frequencyPenalty !== undefined) chat.frequency_penalty = g.frequencyPenalty;
    if (g.seed !== undefined) chat.seed = g.seed;
    const schema = g.responseJsonSchema ?? (g.responseSchema ? googleSchemaToJsonSchema(g.responseSchema) : undefined);
    if (g.responseMimeType === 'application/json') {
      chat.response_format = schema && typeof schema === 'object' ? { type: 'json_schema', json_schema: { name: 'response', schema: schema as Record<string, unknown> } } : { type: 'json_object' };
    } else if (g.responseMimeType !== undefined && g.responseMimeType !== 'text/plain') {
      warnings.push(`generationConfig.responseMimeType ${JSON.stringify(g.responseMimeType)} left out: only application/json translates`);
    }
    const t = g.thinkingConfig;
    if (t) {
      const reasoning: NonNullable<ChatRequest['reasoning']> = {};
      if (t.thinkingBudget === 0) reasoning.enabled = false;
      else if (t.thinkingBudget !== undefined && t.thinkingBudget > 0) reasoning.max_tokens = t.thinkingBudget;
      else if (t.thinkingLevel !== undefined && t.thinkingLevel !== 'THINKING_LEVEL_UNSPECIFIED') reasoning.effort = t.thinkingLevel === 'MINIMAL' ? 'minimal' : t.thinkingLevel === 'LOW' ? 'low' : t.thinkingLevel === 'MEDIUM' ? 'medium' : 'high';
      else reasoning.enabled = true;
      if (t.includeThoughts !== true && reasoning.enabled !== false) reasoning.exclude = true;
      chat.reasoning = reasoning;
    }
    for (const k of Object.keys(g)) if (!KNOWN_CONFIG.has(k)) warnings.push(`generationConfig.${k} left out: no equivalent outside Gemini`);
  }

  const tools: FunctionTool[] = [];
  for (const t of req.tools ?? []) {
    for (const d of t.functionDeclarations ?? []) {
      const fn: FunctionTool['function'] = { name: d.name };
      if (d.description !== undefined) fn.description = d.description;
      const params = d.parametersJsonSchema ?? (d.parameters ? googleSchemaToJsonSchema(d.parameters) : undefined);
      fn.parameters = params && typeof params === 'object' ? (params as Record<string, unknown>) : { type: 'object', properties: {} };
      tools.push({ type: 'function', function: fn });
    }
  }
  for (const b of builtInTools(req)) warnings.push(`tools[${b.index}].${b.name} left out: Google's built-in tools run only on Gemini`);
  if (tools.length) {
    chat.tools = tools;
    const fcc = req.toolConfig?.functionCallingConfig;
    const names = fcc?.allowedFunctionNames ?? [];
    switch (fcc?.mode) {
      case 'ANY':
        chat.tool_choice = names.length === 1 ? { type: 'function', function: { name: names[0]! } } : 'required';
        if (names.length > 1) warnings.push('toolConfig.functionCallingConfig.allowedFunctionNames: more than one name translates as "any tool"');
        break;
      case 'NONE':
        chat.tool_choice = 'none';
        break;
      case 'VALIDATED':
        chat.tool_choice = 'auto';
        warnings.push('toolConfig.functionCallingConfig.mode VALIDATED translated as AUTO');
        break;
      case 'AUTO':
        chat.tool_choice = 'auto';
        break;
      default:
        break;
    }
  }
  if (req.safetySettings?.length) warnings.push('safetySettings left out: they apply only on Gemini');
  if (req.cachedContent !== undefined) warnings.push('cachedContent left out: cached contents exist only on Gemini');
  for (const k of Object.keys(req)) if (!KNOWN.has(k)) warnings.push(`${k} left out: no equivalent outside Gemini`);

  if (req.models) chat.models = req.models;
  if (req.provider) chat.provider = req.provider;
  if (req.op) chat.op = req.op;
  return { chat, warnings };
}

function convertUser(c: GeminiApiContent, i: number, out: ChatMessage[], open: Map<string, string[]>, warnings: string[]): void {
  const parts: ContentPart[] = [];
  c.parts.forEach((p, j) => {
    const where = `contents[${i}].parts[${j}]`;
    if (p.functionResponse) {
      const fr = p.functionResponse;
      const queue = open.get(fr.name) ?? [];
      let id = fr.id;
      if (id !== undefined) {
        const at = queue.indexOf(id);
        if (at >= 0) queue.splice(at, 1);
      } else id = queue.shift() ?? `call_${fr.name}`;
      out.push({ role: 'tool', tool_call_id: id, content: JSON.stringify(fr.response ?? {}) });
      return;
    }
    const part = userPart(p, where, warnings);
    if (part) parts.push(part);
  });
  if (parts.length === 0) return;
  const only = parts.length === 1 ? parts[0]! : undefined;
  out.push({ role: 'user', content: only?.type === 'text' ? only.text : parts });
}

function convertModel(c: GeminiApiContent, i: number, out: ChatMessage[], open: Map<string, string[]>): void {
  let text = '';
  let reasoning = '';
  const toolCalls: ToolCall[] = [];
  const details: ReasoningDetail[] = [];
  c.parts.forEach((p) => {
    let owner: string | undefined;
    if (p.functionCall) {
      const fc = p.functionCall;
      const id = fc.id ?? `call_${i}_${toolCalls.length}`;
      owner = id;
      toolCalls.push({ id, type: 'function', function: { name: fc.name, arguments: JSON.stringify(fc.args ?? {}) } });
      open.set(fc.name, [...(open.get(fc.name) ?? []), id]);
    } else if (typeof p.text === 'string') {
      if (p.thought === true) reasoning += p.text;
      else text += p.text;
    }
    if (p.thoughtSignature) {
      const d: ReasoningDetail = { type: 'reasoning.encrypted', data: p.thoughtSignature, format: GEMINI_REASONING_FORMAT };
      if (owner !== undefined) d.id = owner;
      details.push(d);
    }
  });
  const msg: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: text === '' ? null : text };
  if (toolCalls.length) msg.tool_calls = toolCalls;
  if (reasoning !== '') msg.reasoning = reasoning;
  if (details.length) msg.reasoning_details = details;
  out.push(msg);
}
