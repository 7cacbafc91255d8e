import type { CompletionRequest } from '../../core/chat-types.js';
import { clampOutputLimit, requestedOutputLimit, withOutputLimitAtMost } from '../../core/output-limit.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderAdapter, ResolvedEndpoint, UpstreamCall, UpstreamOperation } from '../../providers/types.js';
import { outputLimitParam, type GenerationInput } from '../state/generation-input.js';

/**
 * How one attempt reaches its endpoint: `native` sends the client's own request on (only the
 * gateway's edits: model name, limits), for "same format in and out", so nothing the internal
 * format cannot carry is lost; `translate` goes through the internal chat request. `operation`
 * tells the provider adapter which response format to parse.
 */
export interface Lane {
  readonly native: boolean;
  readonly operation: UpstreamOperation;
  /**
   * The client receives the upstream's own response (its stream events or body) while the
   * provider's parser still reads usage and errors from it (same format in and out).
   */
  readonly relayUpstream?: boolean;
}

const TRANSLATE: Lane = { native: false, operation: 'chat' };
const NATIVE_TEXT_COMPLETION: Lane = { native: true, operation: 'text-completion' };
const NATIVE_EMBEDDINGS: Lane = { native: true, operation: 'embeddings' };
/** Messages → `anthropic`: the client's body and betas go through; the events come back as sent. */
const NATIVE_MESSAGES: Lane = { native: true, operation: 'chat', relayUpstream: true };
const NATIVE_RESPONSES: Lane = { native: true, operation: 'responses' };

/**
 * The one place that chooses between pass-through and translation, from the client API and the
 * endpoint (its provider kind and what it serves). A new API or a new native pairing (Messages →
 * an `anthropic` provider, Responses → an `openai` endpoint serving `/responses`) adds a case here.
 */
export function chooseLane(input: GenerationInput, target: ResolvedEndpoint, adapter: ProviderAdapter): Lane {
  switch (input.ingress.api) {
    case 'chat':
      // The internal request is the chat format: for `openai` endpoints the translation is the
      // client's body with the gateway's edits (dialect, dropped parameters).
      return TRANSLATE;
    case 'completions':
      return target.endpoint.supports_text_completions && adapter.buildCompletionCall !== undefined ? NATIVE_TEXT_COMPLETION : TRANSLATE;
    case 'responses':
      // Responses → an `openai` endpoint that serves `/responses` (`supports_responses`).
      return target.endpoint.supports_responses && adapter.buildResponsesCall !== undefined ? NATIVE_RESPONSES : TRANSLATE;
    case 'embeddings':
      // Served only by endpoints with `embeddings: true`, on kinds whose adapter builds the call
      // (config refuses the others): `openai` and `local` take the client's fields as they are,
      // `gemini` builds `batchEmbedContents` from them.
      return NATIVE_EMBEDDINGS;
    case 'messages':
      // Same format in and out for `anthropic` endpoints; every other kind translates.
      return target.provider.kind === 'anthropic' ? NATIVE_MESSAGES : TRANSLATE;
  }
}

/**
 * Build the upstream call of a generation attempt in its lane. May be async (e.g. Gemini inlines
 * images). Embeddings calls are built per batch by the embedding attempt.
 */
export function buildUpstreamCall(lane: Lane, input: GenerationInput, target: ResolvedEndpoint, adapter: ProviderAdapter): UpstreamCall | Promise<UpstreamCall> {
  switch (lane.operation) {
    case 'text-completion':
      // chooseLane picks this lane only for the completions API on adapters that build it.
      return adapter.buildCompletionCall!(input.request as CompletionRequest, target, input.stream);
    case 'chat':
      if (lane.native && input.ingress.output === 'generation' && input.ingress.nativeCall) {
        return input.ingress.nativeCall(input.request, target, input.stream, input.headers ?? {});
      }
      return buildTranslatedCall(input, target, adapter);
    case 'responses':
      // chooseLane picks this lane only for the Responses API on adapters that build it.
      return adapter.buildResponsesCall!(input.request as Record<string, unknown>, target, input.stream);
    case 'embeddings':
      throw new GatewayError('internal_error', 'embeddings calls are built per batch by the embedding attempt');
  }
}

/**
 * The translate lane's call: the internal request through the provider adapter, its output limit
 * lowered to the endpoint's `max_completion_tokens` first when above it (routing let it through
 * under `output_limit: clamp`), with a warning for the record.
 */
function buildTranslatedCall(input: GenerationInput, target: ResolvedEndpoint, adapter: ProviderAdapter): UpstreamCall | Promise<UpstreamCall> {
  const cap = target.endpoint.max_completion_tokens;
  const asked = requestedOutputLimit(input.chat);
  if (cap === undefined || asked === undefined || asked <= cap) return adapter.buildChatCall(input.chat, target, input.stream);
  const warnings: string[] = [];
  clampOutputLimit(asked, cap, outputLimitParam(input), warnings);
  const withWarning = (call: UpstreamCall): UpstreamCall => ({ ...call, warnings: [...warnings, ...(call.warnings ?? [])] });
  const call = adapter.buildChatCall(withOutputLimitAtMost(input.chat, cap), target, input.stream);
  return call instanceof Promise ? call.then(withWarning) : withWarning(call);
}
