import type { NativeLane } from '../../types.js';
import { convertToOpenAIResponsesRequest } from '../../openai/native/responses.js';
import { azureSite } from '../convert-to-azure-request.js';
import type { AzureAuth } from '../azure-credentials.js';

/**
 * The native Responses lane of the `azure` kind: every `azure` endpoint takes the client's own
 * Responses request (the `openai` kind's conversion: `store: false`, the deployment as `model`)
 * at `/openai/v1/responses`, or the dated `/openai/responses?api-version=…` on the deployment
 * family; the answer is read by the `openai` kind's Responses parsers (operation `responses`).
 * A deployment whose model has no Responses API answers with its own error.
 */
export function azureResponsesLane(auth: AzureAuth): NativeLane<Record<string, unknown>> {
  return {
    native: true,
    operation: 'responses',
    buildCall: async (req, target, stream) => convertToOpenAIResponsesRequest(req, target, stream, azureSite(await auth.headers(target))),
  };
}
