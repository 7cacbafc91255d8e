import type { ChatRequest } from '../core/chat-types.js';
import { requestedOutputLimit } from '../core/output-limit.js';
import { toMicros } from '../accounting/cost.js';
import type { ResolvedEndpoint } from './resolved-endpoint.js';

/** A prompt's size: a cheap upper bound and the tokenizer's estimate on demand. */
export interface PromptTokens {
  upperBound: number;
  estimate(): number;
}

/** Why an endpoint cannot serve a request. */
export type ExclusionReason =
  | 'ignored'
  | 'not_in_only'
  | 'not_in_order'
  | 'quantization'
  | 'data_policy'
  | 'max_price'
  | 'unsupported_parameter'
  | 'max_completion_tokens'
  | 'context_length'
  | 'circuit_open'
  | 'cooldown'
  | 'input_modality';

/** The verdict of one filter. */
export interface FilterVerdict {
  reason: ExclusionReason;
  detail: string;
}

/** Optional request fields and the `supported_parameters` name each needs. */
const PARAMETER_NAMES: ReadonlyArray<readonly [keyof ChatRequest, string]> = [
  ['temperature', 'temperature'], ['top_p', 'top_p'], ['top_k', 'top_k'], ['min_p', 'min_p'],
  ['stop', 'stop'], ['seed', 'seed'], ['presence_penalty', 'presence_penalty'],
  ['frequency_penalty', 'frequency_penalty'], ['repetition_penalty', 'repetition_penalty'],
  ['logit_bias', 'logit_bias'], ['logprobs', 'logprobs'], ['top_logprobs', 'top_logprobs'],
  ['tools', 'tools'], ['tool_choice', 'tool_choice'], ['parallel_tool_calls', 'parallel_tool_calls'],
  ['response_format', 'response_format'], ['reasoning', 'reasoning'], ['reasoning_effort', 'reasoning_effort'],
  ['user', 'user'],
];

/**
 * Parameters an endpoint must support for this request. Always: tools, a forced tool choice,
 * structured output and logprobs (dropping them would change what the client gets back).
 * With `provider.require_parameters`: every optional parameter sent.
 */
export function requiredParameters(req: ChatRequest): string[] {
  if (req.provider?.require_parameters) {
    return PARAMETER_NAMES.filter(([field]) => req[field] !== undefined && req[field] !== null && !(Array.isArray(req[field]) && (req[field] as unknown[]).length === 0)).map(([, name]) => name);
  }
  const needs: string[] = [];
  if (req.tools && req.tools.length > 0) needs.push('tools');
  if (req.tool_choice !== undefined && req.tool_choice !== 'auto' && req.tools?.length) needs.push('tool_choice');
  if (req.response_format && req.response_format.type !== 'text') needs.push('response_format');
  if (req.logprobs) needs.push('logprobs');
  return needs;
}

/** The input modality each non-text content part needs. */
const PART_MODALITY: Readonly<Record<string, 'image' | 'audio' | 'file'>> = { image_url: 'image', input_audio: 'audio', file: 'file' };

/**
 * The non-text input modalities a request uses, each with the first part that needs it
 * (`messages[3].content[1]`), in order of appearance.
 */
export function requiredModalities(req: ChatRequest): Map<string, string> {
  const needs = new Map<string, string>();
  req.messages.forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((p, j) => {
      const modality = PART_MODALITY[p.type];
      if (modality && !needs.has(modality)) needs.set(modality, `messages[${i}].content[${j}]`);
    });
  });
  return needs;
}

const matches = (list: readonly string[] | undefined, t: ResolvedEndpoint) =>
  list !== undefined && (list.includes(t.provider.id) || list.includes(t.id));

const usdPerM = (price: number | string) => Number(toMicros(price)) / 1e6;

/** The static filters (everything but health), first failing one wins. */
export function filterEndpoint(t: ResolvedEndpoint, req: ChatRequest, needs: readonly string[], prompt: PromptTokens): FilterVerdict | undefined {
  const pref = req.provider ?? {};
  if (matches(pref.ignore, t)) return { reason: 'ignored', detail: 'listed in provider.ignore' };
  if (pref.only && !matches(pref.only, t)) return { reason: 'not_in_only', detail: `not in provider.only [${pref.only.join(', ')}]` };
  if (pref.order && pref.allow_fallbacks === false && !matches(pref.order, t)) {
    return { reason: 'not_in_order', detail: 'not in provider.order and allow_fallbacks is false' };
  }
  if (pref.quantizations && !pref.quantizations.includes(t.endpoint.quantization ?? 'unknown')) {
    return { reason: 'quantization', detail: `quantization ${t.endpoint.quantization ?? 'unknown'} not in [${pref.quantizations.join(', ')}]` };
  }
  const policy = t.provider.data_policy;
  if (pref.data_collection === 'deny' && (policy.retains_prompts || policy.trains_on_prompts)) {
    return { reason: 'data_policy', detail: `provider ${t.provider.id} ${policy.trains_on_prompts ? 'trains on' : 'retains'} prompts (data_collection: deny)` };
  }
  if (pref.zdr && !policy.zdr) return { reason: 'data_policy', detail: `provider ${t.provider.id} is not zero-data-retention (zdr: true)` };
  const mp = pref.max_price;
  if (mp) {
    const p = t.endpoint.pricing;
    if (mp.prompt !== undefined && usdPerM(p.prompt) > mp.prompt) return { reason: 'max_price', detail: `prompt price ${usdPerM(p.prompt)} > max_price.prompt ${mp.prompt} (USD per 1M tokens)` };
    if (mp.completion !== undefined && usdPerM(p.completion) > mp.completion) return { reason: 'max_price', detail: `completion price ${usdPerM(p.completion)} > max_price.completion ${mp.completion} (USD per 1M tokens)` };
    if (mp.request !== undefined && usdPerM(p.request) > mp.request) return { reason: 'max_price', detail: `request price ${usdPerM(p.request)} > max_price.request ${mp.request} (USD)` };
  }
  const supported = t.endpoint.supported_parameters as readonly string[];
  for (const need of needs) {
    const ok = supported.includes(need) || (need === 'response_format' && supported.includes('structured_outputs'));
    if (!ok) return { reason: 'unsupported_parameter', detail: `does not support "${need}"` };
  }
  let outputLimit = requestedOutputLimit(req);
  const maxOut = t.endpoint.max_completion_tokens;
  if (outputLimit !== undefined && maxOut !== undefined && outputLimit > maxOut) {
    // `output_limit: clamp`: the attempt sends the endpoint's cap instead (pipeline/attempt/lane.ts).
    if (t.outputLimit !== 'clamp') return { reason: 'max_completion_tokens', detail: `output limit ${outputLimit} exceeds its max_completion_tokens ${maxOut}` };
    outputLimit = maxOut;
  }
  // The cheap upper bound settles most fits; the tokenizer runs only when it cannot.
  if (prompt.upperBound + (outputLimit ?? 0) > t.contextLength) {
    const promptTokens = prompt.estimate();
    if (promptTokens + (outputLimit ?? 0) > t.contextLength) {
      return { reason: 'context_length', detail: `about ${promptTokens} prompt tokens + ${outputLimit ?? 0} output tokens exceed its context length ${t.contextLength}` };
    }
  }
  return undefined;
}

/** Prompt plus completion price in USD per 1M tokens (for ordering). */
export function endpointPrice(t: ResolvedEndpoint): number {
  return usdPerM(t.endpoint.pricing.prompt) + usdPerM(t.endpoint.pricing.completion);
}
