import type { ChatRequest } from '../api/chat-types.js';
import { requestedOutputLimit } from '../api/request-schemas.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { ResolvedEndpoint } from '../providers/types.js';
import type { Catalog } from './catalog.js';

/** Why an endpoint was left out of a plan. */
export interface Exclusion {
  endpoint: string;
  model: string;
  reason: 'unsupported_parameter' | 'context_length' | 'max_completion_tokens';
  detail: string;
}

/** An ordered list of endpoints to try, and what was excluded on the way. */
export interface RoutePlan {
  endpoints: ResolvedEndpoint[];
  excluded: Exclusion[];
}

/** The request features an endpoint must support (capability filter). */
function requiredCapabilities(req: ChatRequest): string[] {
  const needs: string[] = [];
  if (req.tools && req.tools.length > 0) needs.push('tools');
  if (req.tool_choice !== undefined && req.tool_choice !== 'auto' && req.tools?.length) needs.push('tool_choice');
  if (req.response_format && req.response_format.type !== 'text') needs.push('response_format');
  return needs;
}

/** Check one endpoint; return why it cannot serve, or undefined. */
function exclusionFor(target: ResolvedEndpoint, needs: string[], promptTokens: number, outputLimit: number | undefined): Omit<Exclusion, 'endpoint' | 'model'> | undefined {
  const supported = target.endpoint.supported_parameters as readonly string[];
  for (const need of needs) {
    const ok = need === 'response_format' ? supported.includes('response_format') || supported.includes('structured_outputs') : supported.includes(need);
    if (!ok) return { reason: 'unsupported_parameter', detail: `does not support "${need}"` };
  }
  const maxOut = target.endpoint.max_completion_tokens;
  if (outputLimit !== undefined && maxOut !== undefined && outputLimit > maxOut) {
    return { reason: 'max_completion_tokens', detail: `output limit ${outputLimit} exceeds its max_completion_tokens ${maxOut}` };
  }
  const needed = promptTokens + (outputLimit ?? 0);
  if (needed > target.contextLength) {
    return { reason: 'context_length', detail: `about ${promptTokens} prompt tokens + ${outputLimit ?? 0} output tokens exceed its context length ${target.contextLength}` };
  }
  return undefined;
}

/**
 * Turn a request into an ordered plan: the endpoints of `model` in config order, then those of
 * each model in `models`. Endpoints that cannot serve the request are excluded with a reason.
 * @throws GatewayError `no_providers_configured` when the catalog is empty; `no_endpoint_available`
 *   when no model is known or every endpoint is excluded (the message lists why).
 */
export function planRoute(req: ChatRequest, catalog: Catalog, promptTokens: number): RoutePlan {
  if (catalog.empty) {
    throw new GatewayError(
      'no_providers_configured',
      'no providers or models are configured: add a provider and a model to the config file (opinference.yaml, or the file OP_CONFIG names) and restart; see examples/opinference.yaml',
    );
  }
  const needs = requiredCapabilities(req);
  const outputLimit = requestedOutputLimit(req);
  const plan: RoutePlan = { endpoints: [], excluded: [] };
  const unknown: string[] = [];
  for (const modelId of [req.model, ...(req.models ?? [])]) {
    const entry = catalog.models.get(modelId);
    if (!entry) {
      unknown.push(modelId);
      continue;
    }
    for (const target of entry.endpoints) {
      const why = exclusionFor(target, needs, promptTokens, outputLimit);
      if (why) plan.excluded.push({ endpoint: target.id, model: modelId, ...why });
      else if (!plan.endpoints.includes(target)) plan.endpoints.push(target);
    }
  }
  if (plan.endpoints.length === 0) {
    if (plan.excluded.length === 0) {
      throw new GatewayError('no_endpoint_available', `no endpoint serves model ${JSON.stringify(req.model)}`, {
        param: 'model',
        metadata: { unknown_models: unknown },
      });
    }
    const contextOnly = plan.excluded.every((e) => e.reason === 'context_length');
    const reasons = plan.excluded.map((e) => `${e.endpoint}: ${e.detail}`).join('; ');
    throw new GatewayError(contextOnly ? 'context_length_exceeded' : 'no_endpoint_available', `no endpoint can serve this request for model ${JSON.stringify(req.model)}: ${reasons}`, {
      param: contextOnly ? 'messages' : null,
      metadata: { excluded: plan.excluded },
    });
  }
  return plan;
}
