import type { CompletionRequest } from '../../../core/chat-types.js';
import type { NativeLane } from '../../types.js';
import { convertToOpenAICompletionRequest } from '../../openai/native/completions.js';
import { azureSite } from '../convert-to-azure-request.js';
import type { AzureAuth } from '../azure-credentials.js';

/**
 * The native lane legacy completions API → `azure` endpoint with `supports_text_completions`
 * (models that serve `/completions`, e.g. `gpt-35-turbo-instruct`): the `openai` kind's
 * conversion at Azure's `/completions` URL, read as a text completion.
 */
export function azureCompletionsLane(auth: AzureAuth): NativeLane<CompletionRequest> {
  return {
    native: true,
    operation: 'text-completion',
    requires: 'supports_text_completions',
    buildCall: async (req, target, stream) => convertToOpenAICompletionRequest(req, target, stream, azureSite(await auth.headers(target))),
  };
}
