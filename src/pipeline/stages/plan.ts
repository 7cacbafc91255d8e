import type { PromptSize } from '../../accounting/estimate-tokens.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { PromptTokens } from '../../routing/filters.js';
import { plannableEndpoint, planRoute, refusedForWhatItAsked, type Exclusion, type PlannedEndpoint } from '../../routing/route-plan.js';
import type { ApiKey } from '../../store/keys.js';
import { outputLimitParam, type GenerationInput } from '../state/generation-input.js';
import type { GatewayRuntime } from '../state/runtime.js';

/**
 * The plan stage: the endpoints to try, in order — the router's plan for the internal request,
 * narrowed by the client API where only some endpoints can serve it.
 * @throws GatewayError when no endpoint can serve the request (`no_endpoint_available` …); on an
 *   API with `unservableStatus` (Messages: 400) a refusal for what the request asked gets that
 *   status, `param` naming the output limit when only it excluded the endpoints.
 */
export function planAttempts(rt: GatewayRuntime, input: GenerationInput, prompt: PromptSize): PlannedEndpoint[] {
  let plan: PlannedEndpoint[];
  try {
    plan = planRoute(input.chat, { catalog: rt.catalog, health: rt.health, random: rt.random }, prompt).endpoints;
  } catch (err) {
    // An API routed on a part of its request (embeddings: the longest input) names that part.
    const measure = input.ingress.contextMeasure;
    if (measure && err instanceof GatewayError && err.code === 'context_length_exceeded') {
      throw new GatewayError(err.code, err.message.replace('the request does not fit', `${measure.subject} does not fit`), { param: measure.param, metadata: err.metadata });
    }
    if (err instanceof GatewayError && input.ingress.unservableStatus !== undefined && refusedForWhatItAsked(err)) {
      throw new GatewayError(err.code, err.message, { status: input.ingress.unservableStatus, param: onlyOutputLimit(err) ? outputLimitParam(input) : err.param, metadata: err.metadata });
    }
    throw err;
  }
  if (input.ingress.restrictPlan) return input.ingress.restrictPlan(input.request, plan);
  return input.ingress.output === 'embeddings' ? plan : withoutEmbeddingEndpoints(input, plan);
}

/**
 * A generation (chat, completions, Messages, Responses) is never sent to an embedding model's
 * endpoint (`embeddings: true`): it would cost an upstream call that can only fail.
 * @throws GatewayError `no_endpoint_available` (404, `param: "model"`) when every planned
 *   endpoint is an embeddings endpoint.
 */
function withoutEmbeddingEndpoints(input: GenerationInput, plan: PlannedEndpoint[]): PlannedEndpoint[] {
  if (!plan.some((p) => p.target.endpoint.embeddings)) return plan;
  const serving = plan.filter((p) => !p.target.endpoint.embeddings);
  if (serving.length === 0) {
    throw new GatewayError('no_endpoint_available', `${JSON.stringify(input.chat.model)} is an embedding model (its endpoints declare embeddings: true): send it to /v1/embeddings`, { param: 'model' });
  }
  return serving;
}

/**
 * Whether the request, as admitted (the key's `allowed_models` applied) and resolved (presets,
 * variants, aliases), could be served live now by endpoint `endpointId` of model `modelId`:
 * the key may use the model, the router could plan that endpoint for it, health aside
 * ({@link plannableEndpoint}), and the client API would keep it (`restrictPlan`, no embeddings
 * endpoint for a generation). The response cache serves an entry only when this holds for the
 * model and endpoint that answered it, so a hit never returns what the key could not get live.
 */
export function couldServeLive(rt: GatewayRuntime, input: GenerationInput, key: ApiKey, modelId: string | null, endpointId: string | null, prompt: PromptTokens): boolean {
  if (modelId === null || endpointId === null) return false;
  const allowed = key.settings.allowed_models;
  if (allowed.length > 0 && !allowed.includes(modelId)) return false;
  const target = plannableEndpoint(input.chat, rt.catalog, modelId, endpointId, prompt);
  if (!target) return false;
  if (input.ingress.output !== 'embeddings' && target.endpoint.embeddings) return false;
  if (!input.ingress.restrictPlan) return true;
  try {
    return input.ingress.restrictPlan(input.request, [{ target, reason: 'response-cache' }]).length > 0;
  } catch {
    return false;
  }
}

/** Whether only the output limit excluded the endpoints. */
function onlyOutputLimit(err: GatewayError): boolean {
  return (err.metadata?.excluded as Exclusion[]).every((e) => e.reason === 'max_completion_tokens');
}

