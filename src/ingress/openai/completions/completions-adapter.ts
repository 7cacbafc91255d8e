import type { CompletionRequest } from '../../../core/chat-types.js';
import { GatewayError } from '../../../errors/gateway-error.js';
import type { PlannedEndpoint } from '../../../routing/route-plan.js';
import { STOP_LIST } from '../../body-lists.js';
import type { GenerationIngress } from '../../types.js';
import { openAIErrorBody } from '../error-envelope.js';
import { usageToJson } from '../usage-json.js';
import { parseCompletionRequest } from './completion-request-schema.js';
import { textCompletionBody } from './completion-response-body.js';
import { completionStreamEncoder } from './completion-stream-encoder.js';
import { completionToChat } from './convert-completion-to-chat.js';

/** Legacy-only parameters: they make sense only on endpoints that serve text completions natively. */
const NATIVE_COMPLETION_PARAMS = ['suffix', 'echo', 'best_of', 'logprobs'] as const;

/**
 * Drop endpoints that cannot take legacy-only parameters.
 * @throws GatewayError `unsupported_parameter` naming the first such parameter when none can.
 */
function restrictForCompletion(req: CompletionRequest, plan: PlannedEndpoint[]): PlannedEndpoint[] {
  const used = NATIVE_COMPLETION_PARAMS.find((p) => req[p] !== undefined && req[p] !== null && req[p] !== false);
  if (!used) return plan;
  const native = plan.filter((p) => p.target.endpoint.supports_text_completions);
  if (native.length === 0) {
    throw new GatewayError('unsupported_parameter', `${used}: not supported by the endpoints of ${JSON.stringify(req.model)}, which serve chat only`, { param: used });
  }
  return native;
}

/**
 * `POST /v1/completions` (seed 000, legacy prompt completions): served natively by endpoints with
 * `supports_text_completions` (the `openai` kind's native lane,
 * providers/openai/native/completions.ts), otherwise as a one-message chat.
 * @see https://platform.openai.com/docs/api-reference/completions
 */
export const completionsIngress: GenerationIngress<CompletionRequest> = {
  api: 'completions',
  path: '/v1/completions',
  genAiOperation: 'text_completion',
  bodyLists: { partFields: [], topParts: [], fixed: [STOP_LIST] },
  outputLimitParam: () => 'max_tokens',
  reasoningLimitParam: 'max_completion_tokens',
  output: 'generation',
  contentBlocks: false,
  parse: parseCompletionRequest,
  toChat: completionToChat,
  restrictPlan: restrictForCompletion,
  recordedRequest: (req) => ({ prompt: req.prompt }),
  createStreamEncoder: completionStreamEncoder,
  responseBody: (ident, result, usage, costUsd) => textCompletionBody(ident, result, usageToJson(usage, costUsd)),
  errorBody: openAIErrorBody,
};
