import type { ChatMessage, ChatRequest, ContentPart, ReasoningEffort } from '../../core/chat-types.js';
import { requestedOutputLimit } from '../../core/output-limit.js';
import type { ProviderTarget } from '../types.js';
import { DIALECTS, type ContentMode, type OpenAIDialect } from './dialects.js';

import { GatewayError } from '../../errors/gateway-error.js';
import { foldSystemIntoFirstUser, foldsSystemPrompt } from '../fold-system-prompt.js';

/**
 * Optional request fields and the `supported_parameters` name that allows each. A field whose
 * name the endpoint does not list is dropped (SPEC §2.1).
 */
const OPTIONAL_PARAMS: ReadonlyArray<readonly [keyof ChatRequest & string, string]> = [
  ['temperature', 'temperature'],
  ['top_p', 'top_p'],
  ['top_k', 'top_k'],
  ['min_p', 'min_p'],
  ['stop', 'stop'],
  ['presence_penalty', 'presence_penalty'],
  ['frequency_penalty', 'frequency_penalty'],
  ['repetition_penalty', 'repetition_penalty'],
  ['logit_bias', 'logit_bias'],
  ['logprobs', 'logprobs'],
  ['top_logprobs', 'top_logprobs'],
  ['seed', 'seed'],
  ['tools', 'tools'],
  ['tool_choice', 'tool_choice'],
  ['parallel_tool_calls', 'parallel_tool_calls'],
  ['response_format', 'response_format'],
  ['user', 'user'],
  ['prompt_cache_key', 'prompt_cache_key'],
  ['service_tier', 'service_tier'],
  ['verbosity', 'verbosity'],
  ['metadata', 'metadata'],
];

/**
 * Messages as the server's dialect expects them: earlier reasoning echoed under the dialect's
 * field (or dropped), `reasoning_details` kept only where understood, and `null` rather than
 * `""` beside tool calls.
 */
function toWireMessages(messages: ChatMessage[], dialect: OpenAIDialect, content: ContentMode): unknown[] {
  return messages.map((m) => {
    if (content !== 'parts' && Array.isArray(m.content) && (content === 'string' || m.content.every(isTextPart))) m = { ...m, content: joinTextParts(m.content) } as ChatMessage;
    if (m.role !== 'assistant') return m;
    const { reasoning, reasoning_details, ...rest } = m;
    const out: Record<string, unknown> = { ...rest };
    if (rest.tool_calls?.length && rest.content === '') out.content = null;
    if (reasoning) {
      if (dialect.echoReasoning === 'reasoning') out.reasoning = reasoning;
      else if (dialect.echoReasoning === 'reasoning_content') out.reasoning_content = reasoning;
      else if (dialect.echoReasoning === 'reasoning_content_on_tool_calls' && rest.tool_calls?.length) out.reasoning_content = reasoning;
    }
    if (reasoning_details && dialect.echoReasoningDetails) out.reasoning_details = reasoning_details;
    return out;
  });
}

/** Whether a part is text (or a refusal): what a string can carry. */
const isTextPart = (p: ContentPart): boolean => p.type === 'text' || p.type === 'refusal';

/** Text (and refusal) parts joined in order, a blank line between: for servers that take string content only. */
function joinTextParts(parts: Extract<ChatMessage['content'], unknown[]>): string {
  return parts.map((p) => (p.type === 'text' ? p.text : p.type === 'refusal' ? p.refusal : '')).filter((t) => t !== '').join('\n\n');
}

/**
 * Refuse, before any upstream call, a part a string-content endpoint cannot carry.
 * @throws GatewayError `unsupported_input_modality` naming the part (`messages[3].content[1]`).
 */
function assertStringContent(messages: ChatMessage[], target: ProviderTarget): void {
  messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    const j = m.content.findIndex((p) => !isTextPart(p));
    if (j === -1) return;
    const param = `messages[${i}].content[${j}]`;
    throw new GatewayError('unsupported_input_modality', `${param}: ${m.content[j]!.type} parts cannot be sent to ${target.id}, which takes string content only (string_content)`, { param });
  });
}

/** Reasoning settings in the dialect's form. */
/**
 * The effort an effort-only upstream gets for a token budget (`reasoning.max_tokens`, as Claude
 * Code, the Gemini CLI's `thinkingBudget` and Anthropic-style clients send): the inverse of
 * OpenRouter's fixed budget table (low 1024, medium 4096, high 16000 tokens), split at the
 * midpoints; `enabled: true` alone is medium, as OpenRouter defines it.
 * @see https://openrouter.ai/docs/use-cases/reasoning-tokens
 */
export function effortForBudget(reasoning: NonNullable<ChatRequest['reasoning']>): ReasoningEffort | undefined {
  const budget = reasoning.max_tokens;
  if (budget === undefined) return reasoning.enabled === true ? 'medium' : undefined;
  if (budget <= 0) return 'none';
  return budget < 2048 ? 'low' : budget < 10_000 ? 'medium' : 'high';
}

function applyReasoning(req: ChatRequest, body: Record<string, unknown>, supported: readonly string[], dialect: OpenAIDialect, dropped: string[]): void {
  // A budget without an effort is converted for an effort-only dialect, not lost.
  const effort = req.reasoning_effort ?? req.reasoning?.effort ?? (dialect.reasoningParam === 'reasoning_effort' && req.reasoning ? effortForBudget(req.reasoning) : undefined);
  if (req.reasoning === undefined && req.reasoning_effort == null) return;
  const allowed = supported.includes('reasoning') || supported.includes('reasoning_effort');
  if (!allowed || dialect.reasoningParam === 'none') {
    dropped.push(req.reasoning !== undefined ? 'reasoning' : 'reasoning_effort');
    return;
  }
  if (dialect.reasoningParam === 'reasoning') body.reasoning = req.reasoning ?? { effort };
  else if (effort) body.reasoning_effort = effort;
}

/** Request headers of every call to an `openai` endpoint: JSON, the key, the provider's extra headers. */
export function headersFor(target: ProviderTarget): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (target.provider.api_key) headers.authorization = `Bearer ${target.provider.api_key}`;
  for (const [k, v] of Object.entries(target.provider.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

/** The URL of an API path (`/chat/completions` …) under the provider's base URL. */
export function urlFor(target: ProviderTarget, path: string): string {
  return `${(target.provider.base_url ?? '').replace(/\/+$/, '')}${path}`;
}

/**
 * Where and how a call on OpenAI's wire is sent, for the kinds that speak it with their own URLs
 * and auth (`azure`): `url` of an API path (`/chat/completions`, `/completions`, `/embeddings`,
 * `/responses`), the request `headers`, and the body's `model`.
 */
export interface OpenAIWireSite {
  url(target: ProviderTarget, path: string): string;
  headers(target: ProviderTarget): Record<string, string>;
  model(target: ProviderTarget): string;
}

/** Kind `openai`: paths under `base_url`, the key as `Authorization: Bearer`, the endpoint's `upstream_model`. */
export const OPENAI_SITE: OpenAIWireSite = { url: urlFor, headers: headersFor, model: (target) => target.endpoint.upstream_model };

/** Copy the optional fields the endpoint supports; return the names dropped. */
export function copySupported(req: Record<string, unknown>, body: Record<string, unknown>, supported: readonly string[], pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const dropped: string[] = [];
  for (const [field, param] of pairs) {
    const value = req[field];
    if (value === undefined || value === null) continue;
    if (supported.includes(param)) body[field] = value;
    else dropped.push(field);
  }
  return dropped;
}

/** How a target takes content arrays: its `string_content` (true: `string`, false: `parts`), else its dialect's. */
function contentMode(target: ProviderTarget, dialect: OpenAIDialect): ContentMode {
  const set = target.endpoint.string_content;
  return set === undefined ? dialect.content : set ? 'string' : 'parts';
}

/** The dialect of a target (kind `openai` providers). */
export function openaiDialectOf(target: ProviderTarget): OpenAIDialect {
  return DIALECTS[target.provider.dialect];
}

/**
 * Build the upstream body of an OpenAI-compatible chat call. Streams always ask for usage
 * (`stream_options.include_usage`), whatever the client asked. Content arrays go as the
 * dialect's {@link OpenAIDialect.content} says (or the endpoint's `string_content`): text-only
 * arrays joined into one string for `llamacpp`, `ollama` (arrays with media kept) and
 * string-content servers (`deepseek`, `groq`: media refused); those that fold the system prompt (`fold_system_prompt`, on for Gemma) get system
 * and developer text at the start of the first user turn.
 * @throws GatewayError `unsupported_input_modality` for an image, audio or file part sent to a
 *   string-content endpoint.
 * `site`: where the call goes and how it authenticates (default: kind `openai`'s {@link OPENAI_SITE}).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */
export function convertToOpenAIChatRequest(req: ChatRequest, target: ProviderTarget, stream: boolean, site: OpenAIWireSite = OPENAI_SITE) {
  const supported = target.endpoint.supported_parameters;
  const dialect = openaiDialectOf(target);
  const content = contentMode(target, dialect);
  if (content === 'string') assertStringContent(req.messages, target);
  const messages = foldsSystemPrompt(target) ? foldSystemIntoFirstUser(req.messages) : req.messages;
  const body: Record<string, unknown> = { model: site.model(target), messages: toWireMessages(messages, dialect, content) };
  const dropped = copySupported(req as unknown as Record<string, unknown>, body, supported, OPTIONAL_PARAMS);
  applyReasoning(req, body, supported, dialect, dropped);
  const limit = requestedOutputLimit(req);
  if (limit !== undefined) body[dialect.outputLimitField] = limit;
  if (!dialect.parallelToolCalls && body.parallel_tool_calls !== undefined) {
    delete body.parallel_tool_calls;
    dropped.push('parallel_tool_calls');
  }
  if (!dialect.namedToolChoice && typeof body.tool_choice === 'object' && Array.isArray(body.tools)) {
    // The server ignores a named choice: force a call and offer only that tool.
    const name = (body.tool_choice as { function: { name: string } }).function.name;
    body.tools = (body.tools as { function: { name: string } }[]).filter((t) => t.function.name === name);
    body.tool_choice = 'required';
  }
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return { url: site.url(target, '/chat/completions'), headers: site.headers(target), body: JSON.stringify(body), dropped };
}
