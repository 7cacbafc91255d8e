import { clampOutputLimit } from '../../../core/output-limit.js';
import type { NativeLane, ProviderTarget, UpstreamCall } from '../../types.js';
import { anthropicHeaders, anthropicMessagesUrl } from '../convert-to-anthropic-request.js';

/**
 * The native lane Messages API → `anthropic` provider ("same format in and out"): the client's
 * Messages body and betas go upstream with only the gateway's edits, and the upstream's events
 * or body come back to the client as sent, while the adapter's parser (operation `chat`) reads
 * usage and errors from them. Its second operation is `count_tokens`.
 * @see https://docs.anthropic.com/en/api/messages
 */

/**
 * The members of a validated Messages request (ingress/anthropic/messages/messages-request-schema.ts)
 * that the gateway edits; every other member goes upstream as sent.
 */
export interface NativeMessagesRequest {
  readonly max_tokens: number;
  readonly thinking?: { type: 'enabled'; budget_tokens: number } | { type: 'disabled' } | { type: 'adaptive' };
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: string | ReadonlyArray<{ readonly type: string; readonly signature?: string }> }>;
  readonly [field: string]: unknown;
}

/** Anthropic's smallest thinking budget, in tokens. */
export const MIN_THINKING_BUDGET = 1024;

/** The client headers an `anthropic` upstream receives as sent. */
export const FORWARDED_HEADERS = ['anthropic-version', 'anthropic-beta'] as const;

const GATEWAY_FIELDS = ['models', 'provider', 'op'] as const;

/**
 * Upstream headers: the provider's (`x-api-key`, its configured `headers`), the client's
 * `anthropic-version` instead of the default, and `anthropic-beta` verbatim (joined with the
 * provider's own betas when it configures some).
 */
export function nativeHeaders(target: ProviderTarget, client: Readonly<Record<string, string>>): Record<string, string> {
  const headers = anthropicHeaders(target.provider);
  const version = client['anthropic-version'];
  if (version && target.provider.headers['anthropic-version'] === undefined) headers['anthropic-version'] = version;
  const beta = client['anthropic-beta'];
  if (beta) headers['anthropic-beta'] = headers['anthropic-beta'] ? `${headers['anthropic-beta']},${beta}` : beta;
  return headers;
}

/**
 * The client's Messages body with only the gateway's edits, for an `anthropic` endpoint (the
 * pass-through lane): the gateway fields removed, `model` → the endpoint's `upstream_model`,
 * `max_tokens` capped at the endpoint's `max_completion_tokens` (routing sends a larger one here
 * only under `output_limit: clamp`), a thinking budget below
 * Anthropic's minimum (1024) raised to it — or thinking left out when `max_tokens` leaves no
 * room (Claude Code's background calls send 500) —, and thinking blocks without a signature
 * (from a translated answer) left out of the history. Everything else — thinking signatures,
 * `cache_control`, server tools, betas' fields — goes through as sent. Each edit is a warning.
 */
export function nativeMessagesBody(req: NativeMessagesRequest, target: ProviderTarget, warnings: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = { ...req, model: target.endpoint.upstream_model };
  for (const f of GATEWAY_FIELDS) delete body[f];
  const maxTokens = clampOutputLimit(req.max_tokens, target.endpoint.max_completion_tokens, 'max_tokens', warnings);
  if (maxTokens !== req.max_tokens) body.max_tokens = maxTokens;
  const thinking = req.thinking;
  if (thinking?.type === 'enabled' && thinking.budget_tokens < MIN_THINKING_BUDGET) {
    if (maxTokens !== undefined && maxTokens <= MIN_THINKING_BUDGET) {
      warnings.push(`thinking left out: budget_tokens ${thinking.budget_tokens} is below Anthropic's minimum ${MIN_THINKING_BUDGET} and max_tokens ${maxTokens} leaves no room to raise it`);
      delete body.thinking;
    } else {
      warnings.push(`thinking.budget_tokens ${thinking.budget_tokens} raised to Anthropic's minimum ${MIN_THINKING_BUDGET}`);
      body.thinking = { ...thinking, budget_tokens: MIN_THINKING_BUDGET };
    }
  } else if (thinking?.type === 'enabled' && maxTokens !== undefined && maxTokens !== req.max_tokens && thinking.budget_tokens >= maxTokens) {
    // Clamped (output_limit: clamp): Anthropic requires budget_tokens < max_tokens.
    if (maxTokens - 1 < MIN_THINKING_BUDGET) {
      warnings.push(`thinking left out: budget_tokens ${thinking.budget_tokens} does not fit the clamped max_tokens ${maxTokens}`);
      delete body.thinking;
    } else {
      warnings.push(`thinking.budget_tokens ${thinking.budget_tokens} lowered to ${maxTokens - 1}, below the clamped max_tokens ${maxTokens}`);
      body.thinking = { ...thinking, budget_tokens: maxTokens - 1 };
    }
  }
  let unsigned = 0;
  const messages = req.messages.map((m) => {
    if (m.role !== 'assistant' || typeof m.content === 'string') return m;
    const kept = m.content.filter((b) => !(b.type === 'thinking' && b.signature === ''));
    unsigned += m.content.length - kept.length;
    return kept.length === m.content.length ? m : { ...m, content: kept };
  });
  if (unsigned > 0) {
    warnings.push(`${unsigned} unsigned thinking block(s) left out of the history: Anthropic accepts only its own signed thinking`);
    body.messages = messages;
  }
  return body;
}

/** The native `POST …/v1/messages` call (the pass-through lane). */
export function nativeMessagesCall(req: NativeMessagesRequest, target: ProviderTarget, stream: boolean, client: Readonly<Record<string, string>>): UpstreamCall {
  const warnings: string[] = [];
  const body = nativeMessagesBody(req, target, warnings);
  if (stream) body.stream = true;
  else delete body.stream;
  return { url: anthropicMessagesUrl(target.provider.base_url), headers: nativeHeaders(target, client), body: JSON.stringify(body), dropped: [], warnings };
}

/** The native `POST …/v1/messages/count_tokens` call: the body without `max_tokens` and `stream`. */
export function nativeCountTokensCall(req: NativeMessagesRequest, target: ProviderTarget, client: Readonly<Record<string, string>>): UpstreamCall {
  const warnings: string[] = [];
  const body = nativeMessagesBody(req, target, warnings);
  delete body.max_tokens;
  delete body.stream;
  return { url: `${anthropicMessagesUrl(target.provider.base_url)}/count_tokens`, headers: nativeHeaders(target, client), body: JSON.stringify(body), dropped: [], warnings };
}

/**
 * The Messages API's native lane of the `anthropic` kind: `buildCall` is {@link nativeMessagesCall},
 * `countTokens` {@link nativeCountTokensCall}; no endpoint flag is needed (every `anthropic`
 * endpoint serves Messages).
 */
export const ANTHROPIC_MESSAGES_LANE: NativeLane<NativeMessagesRequest> = {
  native: true,
  operation: 'chat',
  relayUpstream: true,
  buildCall: (req, target, stream, headers) => nativeMessagesCall(req, target, stream, headers),
  countTokens: (req, target, headers) => nativeCountTokensCall(req, target, headers),
};
