import { GatewayError } from '../../errors/gateway-error.js';
import { clampOutputLimit, requestedOutputLimit, withOutputLimitAtMost } from '../../core/output-limit.js';
import type { NativeLane, ProviderAdapter, UpstreamCall, UpstreamOperation } from '../../providers/types.js';
import type { ResolvedEndpoint } from '../../routing/resolved-endpoint.js';
import { outputLimitParam, type GenerationInput } from '../state/generation-input.js';

/**
 * How one attempt reaches its endpoint: a provider's {@link NativeLane} sends the client's own
 * request on (only the gateway's edits: model name, limits), for "same format in and out", so
 * nothing the internal format cannot carry is lost; the translate lane goes through the internal
 * chat request. `operation` tells the provider adapter which response format to parse.
 */
export type Lane = TranslateLane | NativeLane;

/** The translate lane: the internal chat request through the adapter's `buildChatCall`. */
export interface TranslateLane {
  readonly native: false;
  readonly operation: UpstreamOperation;
  readonly relayUpstream?: undefined;
}

const TRANSLATE: TranslateLane = { native: false, operation: 'chat' };
/**
 * Embeddings: built per batch by the embedding attempt from the internal embeddings request
 * (`buildEmbeddingCall`), on every kind whose adapter builds one (config refuses the others).
 */
const EMBEDDINGS: TranslateLane = { native: false, operation: 'embeddings' };

/**
 * The one place that chooses between pass-through and translation: the provider adapter's
 * native lane for the client API (providers/<kind>/native/), when the endpoint has the flag the
 * lane requires (`supports_text_completions`, `supports_responses`) and the lane serves its model
 * (`servesModel`); else translation. A new
 * native pairing is a lane in the provider's folder, nothing here.
 */
export function chooseLane(input: GenerationInput, target: ResolvedEndpoint, adapter: ProviderAdapter): Lane {
  if (input.ingress.output === 'embeddings') return EMBEDDINGS;
  const native = adapter.native[input.ingress.api];
  if (native === undefined || (native.requires !== undefined && target.endpoint[native.requires] !== true)) return TRANSLATE;
  if (native.servesModel !== undefined && !native.servesModel(target)) return TRANSLATE;
  return native;
}

/** No client headers: what a native lane gets when the API forwards none. */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * Build the upstream call of a generation attempt in its lane. May be async (e.g. Gemini inlines
 * images). Embeddings calls are built per batch by the embedding attempt.
 */
export function buildUpstreamCall(lane: Lane, input: GenerationInput, target: ResolvedEndpoint, adapter: ProviderAdapter): UpstreamCall | Promise<UpstreamCall> {
  if (lane.operation === 'embeddings') throw new GatewayError('internal_error', 'embeddings calls are built per batch by the embedding attempt');
  if (lane.native) return lane.buildCall(input.request, target, input.stream, input.headers ?? NO_HEADERS);
  return buildTranslatedCall(input, target, adapter);
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
