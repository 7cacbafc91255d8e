import type { ChatRequest } from '../../core/chat-types.js';
import { parameterGate } from '../parameter-gate.js';
import { requestedOutputLimit } from '../../core/output-limit.js';
import type { ProviderConfig } from '../../config/schema.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { planThinking, thinkingBudgetFor, wantsSummarizedThinking } from './anthropic-thinking.js';
import type { AnthropicRequestBody, AnthropicThinking } from './anthropic-wire-types.js';
import { convertToAnthropicMessages } from './convert-to-anthropic-messages.js';
import { prepareAnthropicTools } from './prepare-anthropic-tools.js';

/** Where Anthropic's API lives when a provider sets no `base_url`. */
export const DEFAULT_ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/** The only API version the Messages API documents. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** `max_tokens` when neither the request nor the endpoint gives a limit (Anthropic requires one). */
export const DEFAULT_MAX_TOKENS = 4096;

/** Anthropic's temperature range is 0–1 (OpenAI's is 0–2). */
const MAX_TEMPERATURE = 1;

/** With thinking, Anthropic accepts `top_p` only from 0.95 to 1. */
const MIN_TOP_P_WITH_THINKING = 0.95;

/** Request fields with no Anthropic equivalent: always dropped (and listed) when present. */
const NO_EQUIVALENT = ['seed', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'min_p', 'logit_bias', 'logprobs', 'top_logprobs', 'service_tier', 'verbosity', 'metadata'] as const;

/**
 * `POST …/v1/messages` under the provider's `base_url` (default {@link DEFAULT_ANTHROPIC_BASE_URL});
 * trailing slashes are stripped and a base that already ends in `/v1` is not doubled.
 */
export function anthropicMessagesUrl(baseUrl: string | undefined): string {
  const base = (baseUrl ?? DEFAULT_ANTHROPIC_BASE_URL).replace(/\/+$/, '');
  return /\/v1$/i.test(base) ? `${base}/messages` : `${base}/v1/messages`;
}

/** `x-api-key`, `anthropic-version`, JSON content type, then the provider's own `headers`. */
export function anthropicHeaders(provider: ProviderConfig): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (provider.api_key) headers['x-api-key'] = provider.api_key;
  for (const [k, v] of Object.entries(provider.headers)) headers[k.toLowerCase()] = v;
  return headers;
}

/** `stop` as `stop_sequences`; whitespace-only sequences (rejected by Anthropic) are left out. */
function stopSequences(stop: string | string[], warnings: string[]): string[] {
  const all = typeof stop === 'string' ? [stop] : stop;
  const kept = all.filter((s) => s.trim() !== '');
  if (kept.length < all.length) warnings.push(`${all.length - kept.length} whitespace-only stop sequence(s) left out: Anthropic rejects them`);
  return kept;
}

/**
 * Build the Messages API call for an OpenAI-format chat request:
 * - `max_tokens`: the request's limit, else the endpoint's `max_completion_tokens`, else 4096;
 * - messages and `system` per {@link convertToAnthropicMessages}; tools, tool choice and
 *   response format per {@link prepareAnthropicTools};
 * - `reasoning` / `reasoning_effort` → `thinking: {type:"enabled", budget_tokens}` (see
 *   `anthropic-thinking.ts`), which also drops temperature / top_k (and a top_p below 0.95);
 * - `temperature` above 1 is clamped to 1; `top_p`, `top_k` pass; `stop` → `stop_sequences`;
 *   `user` → `metadata.user_id`;
 * - an optional field the endpoint does not list in `supported_parameters` is dropped and
 *   named in `dropped` (`parallel_tool_calls` is also allowed by `tool_choice`,
 *   `reasoning_effort` by `reasoning`, `response_format` by `structured_outputs`); fields with
 *   no Anthropic equivalent (seed, penalties, logit_bias, logprobs …) are always dropped;
 * - every adjustment is described in `warnings`.
 * @throws GatewayError `invalid_request` (with `param`) for content Anthropic cannot take.
 * @see https://docs.anthropic.com/en/api/messages
 * @see https://docs.anthropic.com/en/api/openai-sdk
 */
export function convertToAnthropicRequest(req: ChatRequest, target: ProviderTarget, stream: boolean): UpstreamCall {
  const supported = target.endpoint.supported_parameters as readonly string[];
  const { dropped, present, allow } = parameterGate(req, supported);
  const warnings: string[] = [];

  const prompt = convertToAnthropicMessages(req.messages);
  if (prompt.messages.length === 0) {
    throw new GatewayError('invalid_request', 'messages: Anthropic needs at least one user or assistant message with non-empty content', { param: 'messages' });
  }

  let maxTokens = requestedOutputLimit(req) ?? target.endpoint.max_completion_tokens ?? DEFAULT_MAX_TOKENS;
  let thinking: AnthropicThinking | undefined;
  const reasoning = allow('reasoning', 'reasoning') ? req.reasoning : undefined;
  const reasoningEffort = allow('reasoning_effort', 'reasoning_effort', 'reasoning') ? req.reasoning_effort : undefined;
  const budget = thinkingBudgetFor({ reasoning, reasoningEffort, maxTokens });
  if (budget !== null) {
    const exclude = reasoning?.exclude === true;
    const plan = planThinking(budget, maxTokens, target.endpoint.max_completion_tokens, exclude, wantsSummarizedThinking(target.endpoint.upstream_model, exclude));
    warnings.push(...plan.warnings);
    if (plan.thinking) {
      thinking = plan.thinking;
      maxTokens = plan.maxTokens;
    }
  }

  const body: AnthropicRequestBody = { model: target.endpoint.upstream_model, max_tokens: maxTokens, messages: prompt.messages };
  if (prompt.system.length > 0) body.system = prompt.system;

  if (allow('temperature', 'temperature')) {
    const t = req.temperature as number;
    if (thinking) warnings.push(`temperature ${t} not sent: Anthropic does not accept it with extended thinking`);
    else if (t > MAX_TEMPERATURE) {
      warnings.push(`temperature ${t} clamped to ${MAX_TEMPERATURE} (Anthropic accepts 0 to ${MAX_TEMPERATURE})`);
      body.temperature = MAX_TEMPERATURE;
    } else body.temperature = t;
  }
  if (allow('top_p', 'top_p')) {
    const p = req.top_p as number;
    if (thinking && p < MIN_TOP_P_WITH_THINKING) warnings.push(`top_p ${p} not sent: with extended thinking Anthropic accepts only ${MIN_TOP_P_WITH_THINKING} to 1`);
    else body.top_p = p;
  }
  if (allow('top_k', 'top_k')) {
    if (thinking) warnings.push(`top_k ${req.top_k} not sent: Anthropic does not accept it with extended thinking`);
    else body.top_k = req.top_k as number;
  }
  if (allow('stop', 'stop')) {
    const seqs = stopSequences(req.stop as string | string[], warnings);
    if (seqs.length > 0) body.stop_sequences = seqs;
  }

  const tools = prepareAnthropicTools({
    tools: allow('tools', 'tools') ? req.tools : undefined,
    toolChoice: allow('tool_choice', 'tool_choice') ? req.tool_choice : undefined,
    parallelToolCalls: allow('parallel_tool_calls', 'parallel_tool_calls', 'tool_choice') ? req.parallel_tool_calls : undefined,
    responseFormat: allow('response_format', 'response_format', 'structured_outputs') ? req.response_format : undefined,
    nativeStructuredOutputs: supported.includes('structured_outputs'),
    thinking: thinking !== undefined,
    hasToolBlocks: prompt.hasToolBlocks,
  });
  warnings.push(...tools.warnings);
  if (tools.tools) body.tools = tools.tools;
  if (tools.tool_choice) body.tool_choice = tools.tool_choice;
  if (tools.output_config) body.output_config = tools.output_config;
  if (thinking) body.thinking = thinking;
  if (req.cache_control) body.cache_control = req.cache_control;
  if (allow('user', 'user')) body.metadata = { user_id: req.user as string };
  for (const field of NO_EQUIVALENT) if (present(field)) dropped.push(field);
  if (stream) body.stream = true;

  return { url: anthropicMessagesUrl(target.provider.base_url), headers: anthropicHeaders(target.provider), body: JSON.stringify(body), dropped, warnings };
}
