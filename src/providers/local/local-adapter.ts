import type { ProviderConfig } from '../../config/schema.js';
import { createOpenAIAdapter } from '../openai/openai-adapter.js';
import type { CompletionRequest } from '../../core/chat-types.js';
import { OPENAI_COMPLETIONS_LANE } from '../openai/native/completions.js';
import type { NativeLane, ProviderAdapter, ProviderTarget } from '../types.js';
import { engineFor, type EngineEndpoint, type EngineSupervisor } from './engine-supervisor.js';
import { engineStartConfig } from './local-settings.js';

/**
 * The adapter for provider kind `local`: GGUF models run by llama.cpp (node-llama-cpp) in a
 * supervised child process per endpoint. The engine speaks the OpenAI wire format, so this
 * adapter is the OpenAI adapter pointed at the engine's loopback address: request conversion,
 * response parsing, the SSE stream transform and error mapping are the same code, and the
 * call goes through the gateway's usual pools, timeouts and cancellation. Embeddings
 * (`embeddings: true`) too: the engine serves an OpenAI-compatible `POST /v1/embeddings` and
 * reports its own token count as `usage.prompt_tokens`.
 */
export function createLocalAdapter(provider: ProviderConfig): ProviderAdapter {
  const openai = createOpenAIAdapter(provider.id);

  // Engines by model source (this adapter lives as long as this provider config does).
  const engines = new Map<string, EngineSupervisor>();
  const engine = (target: ProviderTarget): EngineSupervisor => {
    const source = target.endpoint.upstream_model;
    let e = engines.get(source);
    if (!e || e.stopped) {
      const { config, loadWaitMs } = engineStartConfig(provider, source);
      e = engineFor(config, loadWaitMs);
      engines.set(source, e);
    }
    return e;
  };

  /** The target with the provider's address replaced by the engine's. */
  const atEngine = (target: ProviderTarget, at: EngineEndpoint): ProviderTarget => ({
    ...target,
    provider: { ...target.provider, base_url: `${at.origin}/v1`, api_key: at.token, headers: {} },
  });

  /** Legacy completions go natively to the engine (`supports_text_completions`), as to an `openai` endpoint. */
  const completions: NativeLane<CompletionRequest> = {
    ...OPENAI_COMPLETIONS_LANE,
    async buildCall(req, target, stream, headers) {
      const at = await engine(target).endpoint();
      return OPENAI_COMPLETIONS_LANE.buildCall(req, atEngine(target, at), stream, headers);
    },
  };

  return {
    native: { completions },
    async buildChatCall(req, target, stream) {
      const at = await engine(target).endpoint();
      return openai.buildChatCall(req, atEngine(target, at), stream);
    },
    async buildEmbeddingCall(req, target) {
      const at = await engine(target).endpoint();
      return openai.buildEmbeddingCall!(req, atEngine(target, at));
    },
    parseEmbeddingResult: openai.parseEmbeddingResult!,
    parseResult: openai.parseResult,
    createStreamTransform: openai.createStreamTransform,
    parseErrorResponse: openai.parseErrorResponse,
  };
}
