import type { ChatRequest, FunctionTool, ResponseFormat, ToolChoice } from '../../core/chat-types.js';
import { requestedOutputLimit } from '../../core/output-limit.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { convertJsonSchemaToGemini } from './convert-json-schema-to-gemini.js';
import { convertToGeminiContents, type ContentsOptions } from './convert-to-gemini-contents.js';
import { convertToGeminiThinkingConfig, usesThinkingLevel } from './gemini-thinking-config.js';
import { foldsSystemPrompt } from '../fold-system-prompt.js';
import type { GeminiContent, GeminiFunctionDeclaration, GeminiGenerationConfig, GeminiPart, GeminiRequest } from './gemini-wire-types.js';

/** Where the Gemini API lives when a provider sets no `base_url`. */
export const DEFAULT_GEMINI_BASE_URL = 'https://generativelanguage.googleapis.com';

/**
 * Request fields Gemini has no equivalent for: always left out, and listed as dropped.
 * (`logprobs` exists upstream but the gateway does not relay log probabilities; `user` has no
 * Gemini field.)
 */
const NO_EQUIVALENT = ['min_p', 'repetition_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'parallel_tool_calls', 'user', 'prompt_cache_key', 'service_tier', 'verbosity', 'metadata'] as const;

/**
 * The URL of a call: `<base>/v1beta/models/<model>:generateContent`, or
 * `:streamGenerateContent?alt=sse` for streams. A base that already ends with a version
 * segment (`/v1`, `/v1beta`, `/v1alpha`) is used as is; trailing slashes are ignored. A model
 * given as `models/…` or `tunedModels/…` keeps its collection.
 * @see https://ai.google.dev/api/generate-content#endpoint
 */
export function geminiUrl(baseUrl: string | undefined, upstreamModel: string, stream: boolean): string {
  return geminiMethodUrl(baseUrl, upstreamModel, stream ? 'streamGenerateContent?alt=sse' : 'generateContent');
}

/**
 * The model's resource name as Gemini writes it: `models/<model>`, or the name as given when it
 * already names its collection (`models/…`, `tunedModels/…`).
 */
export function geminiModelName(upstreamModel: string): string {
  return /^(models|tunedModels)\//.test(upstreamModel) ? upstreamModel : `models/${upstreamModel}`;
}

/**
 * The URL of one method on a model, `<base>/v1beta/<model name>:<method>` (the version and
 * model rules of {@link geminiUrl}); `method` may carry a query (`streamGenerateContent?alt=sse`).
 */
export function geminiMethodUrl(baseUrl: string | undefined, upstreamModel: string, method: string): string {
  const base = (baseUrl ?? DEFAULT_GEMINI_BASE_URL).replace(/\/+$/, '');
  const versioned = /\/v\d+[a-z0-9]*$/i.test(base) ? base : `${base}/v1beta`;
  const path = geminiModelName(upstreamModel).split('/').map(encodeURIComponent).join('/');
  return `${versioned}/${path}:${method}`;
}

/** Headers of a call: the key as `x-goog-api-key`, then the provider's extra headers. */
export function geminiHeaders(target: ProviderTarget, stream: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json' };
  if (target.provider.api_key) headers['x-goog-api-key'] = target.provider.api_key;
  for (const [k, v] of Object.entries(target.provider.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

/**
 * System instruction parts put at the start of the first user turn (a user turn of their own
 * at the start when there is none): the text parts joined, a blank line between.
 */
function foldIntoFirstUserContent(system: GeminiPart[], contents: GeminiContent[]): GeminiContent[] {
  const text = system.map((p) => (typeof p.text === 'string' ? p.text : '')).filter((t) => t !== '').join('\n\n');
  if (text === '') return contents;
  const first = contents.findIndex((c) => c.role === 'user');
  if (first === -1) return [{ role: 'user', parts: [{ text }] }, ...contents];
  return contents.map((c, i) => (i === first ? { ...c, parts: [{ text }, ...(c.parts ?? [])] } : c));
}

/** OpenAI tools → one Gemini tool holding every function declaration. */
function functionDeclarations(tools: FunctionTool[]): GeminiFunctionDeclaration[] {
  return tools.map((t) => {
    const decl: GeminiFunctionDeclaration = { name: t.function.name };
    if (t.function.description) decl.description = t.function.description;
    const parameters = convertJsonSchemaToGemini(t.function.parameters);
    if (parameters) decl.parameters = parameters;
    return decl;
  });
}

/** `tool_choice` → `functionCallingConfig`: none → NONE, auto → AUTO, required → ANY, a named function → ANY limited to it. */
function functionCallingConfig(choice: ToolChoice): NonNullable<GeminiRequest['toolConfig']>['functionCallingConfig'] {
  if (typeof choice === 'object') return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  switch (choice) {
    case 'none':
      return { mode: 'NONE' };
    case 'auto':
      return { mode: 'AUTO' };
    case 'required':
      return { mode: 'ANY' };
  }
}

/** `response_format` → JSON output settings: json_object → `responseMimeType`; json_schema → also `responseJsonSchema` (JSON Schema, sent as given). */
function applyResponseFormat(format: ResponseFormat, config: GeminiGenerationConfig): void {
  switch (format.type) {
    case 'text':
      return;
    case 'json_object':
      config.responseMimeType = 'application/json';
      return;
    case 'json_schema':
      config.responseMimeType = 'application/json';
      if (format.json_schema.schema) config.responseJsonSchema = format.json_schema.schema;
      return;
  }
}

/**
 * Build the upstream call of a chat request to a Gemini endpoint.
 *
 * Optional parameters the endpoint does not list in `supported_parameters` are dropped (and
 * listed in `dropped`), as are those Gemini has no field for (`min_p`, `repetition_penalty`,
 * `logit_bias`, `logprobs`, `top_logprobs`, `parallel_tool_calls`, `user`). The rest map to
 * `generationConfig`: `max_tokens`/`max_completion_tokens` (the larger) → `maxOutputTokens`,
 * `temperature`, `top_p` → `topP`, `top_k` → `topK`, `stop` → `stopSequences`,
 * `presence_penalty`, `frequency_penalty`, `seed`, `response_format` (see
 * {@link applyResponseFormat}), `reasoning`/`reasoning_effort` → `thinkingConfig` (see
 * `gemini-thinking-config.ts`); `tools` → `functionDeclarations` (schemas cleaned by
 * `convertJsonSchemaToGemini`) and `tool_choice` → `toolConfig` (sent only with tools).
 * Messages are converted by `convertToGeminiContents`; for endpoints that fold the system
 * prompt (`fold_system_prompt`, on by default for Gemma, which rejects `systemInstruction`)
 * the system text goes at the start of the first user turn instead.
 * @throws GatewayError `invalid_request` for messages Gemini cannot take (`param` set).
 * @see https://ai.google.dev/api/generate-content#request-body
 */
export async function convertToGeminiRequest(
  req: ChatRequest,
  target: ProviderTarget,
  stream: boolean,
  fetchImage: ContentsOptions['fetchImage'],
): Promise<UpstreamCall> {
  const supported = target.endpoint.supported_parameters as readonly string[];
  const upstreamModel = target.endpoint.upstream_model;
  const dropped: string[] = [];
  const take = <K extends keyof ChatRequest>(field: K, ...names: string[]): NonNullable<ChatRequest[K]> | undefined => {
    const value = req[field];
    if (value === undefined || value === null) return undefined;
    if ([field as string, ...names].some((n) => supported.includes(n))) return value as NonNullable<ChatRequest[K]>;
    dropped.push(field);
    return undefined;
  };

  const { systemInstruction, contents, warnings } = await convertToGeminiContents(req.messages, {
    fetchImage,
    signatureSentinel: usesThinkingLevel(upstreamModel),
  });
  const body: GeminiRequest = { contents };
  if (systemInstruction && foldsSystemPrompt(target)) body.contents = foldIntoFirstUserContent(systemInstruction.parts, contents);
  else if (systemInstruction) body.systemInstruction = systemInstruction;

  const config: GeminiGenerationConfig = {};
  const outputLimit = requestedOutputLimit(req);
  if (outputLimit !== undefined) config.maxOutputTokens = outputLimit;
  const temperature = take('temperature');
  if (temperature !== undefined) config.temperature = temperature;
  const topP = take('top_p');
  if (topP !== undefined) config.topP = topP;
  const topK = take('top_k');
  if (topK !== undefined) config.topK = topK;
  const stop = take('stop');
  if (stop !== undefined) {
    const list = (typeof stop === 'string' ? [stop] : stop).filter((s) => s !== '');
    if (list.length > 0) config.stopSequences = list;
  }
  const presence = take('presence_penalty');
  if (presence !== undefined) config.presencePenalty = presence;
  const frequency = take('frequency_penalty');
  if (frequency !== undefined) config.frequencyPenalty = frequency;
  const seed = take('seed');
  if (seed !== undefined) config.seed = seed;
  const format = take('response_format', 'structured_outputs');
  if (format) applyResponseFormat(format, config);
  const thinking = convertToGeminiThinkingConfig(take('reasoning'), take('reasoning_effort'), upstreamModel, outputLimit, warnings);
  if (thinking) config.thinkingConfig = thinking;

  const tools = take('tools');
  const toolChoice = take('tool_choice');
  if (tools && tools.length > 0) {
    body.tools = [{ functionDeclarations: functionDeclarations(tools) }];
    if (toolChoice !== undefined) body.toolConfig = { functionCallingConfig: functionCallingConfig(toolChoice) };
  }
  for (const field of NO_EQUIVALENT) {
    const value = req[field];
    if (value !== undefined && value !== null) dropped.push(field);
  }
  if (Object.keys(config).length > 0) body.generationConfig = config;

  const call: UpstreamCall = {
    url: geminiUrl(target.provider.base_url, upstreamModel, stream),
    headers: geminiHeaders(target, stream),
    body: JSON.stringify(body),
    dropped,
  };
  if (warnings.length > 0) call.warnings = warnings;
  return call;
}
