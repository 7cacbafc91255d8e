import type { ChatRequest, CompletionRequest, Usage } from '../core/chat-types.js';
import type { ChatResult } from '../core/chat-result.js';
import type { EmbeddingRequest, EmbeddingResult } from '../core/embedding-types.js';
import type { StreamPart } from '../core/stream-part.js';
import type { EndpointConfig, ModelConfig, OutputLimitPolicy, ProviderConfig, TimeoutsConfig } from '../config/schema.js';
import type { GatewayError } from '../errors/gateway-error.js';

/** One model served by one provider, resolved from config; what the router plans with. */
export interface ResolvedEndpoint {
  /** Stable id: `<provider id>/<upstream model>`. */
  readonly id: string;
  readonly model: ModelConfig;
  readonly endpoint: EndpointConfig;
  readonly provider: ProviderConfig;
  /** Effective timeouts: the endpoint's overrides on top of the provider's, in ms. */
  readonly timeouts: TimeoutsConfig;
  /** Context window in tokens (the endpoint's, else the model's). */
  readonly contextLength: number;
  /** A request above `max_completion_tokens`: excluded, or sent with its limit lowered (`output_limit`: the endpoint's, else the model's, else `exclude`). */
  readonly outputLimit: OutputLimitPolicy;
}

/** An HTTP call to make upstream. */
export interface UpstreamCall {
  url: string;
  headers: Record<string, string>;
  /** JSON text of the body. */
  body: string;
  /** Request parameters dropped because the endpoint does not list them in `supported_parameters`. */
  dropped: string[];
  /** Adjustments made while converting (e.g. a sampling value clamped), kept in the generation record. */
  warnings?: string[];
}

/** Turns a provider's stream events into {@link StreamPart}s; one instance per stream. */
export interface StreamTransform {
  /** Feed one SSE event (`data` text; `event` name when the protocol uses them). */
  push(event: { data: string; event?: string | undefined }): StreamPart[];
  /** The stream ended; return what is still buffered. */
  flush(): StreamPart[];
  /**
   * Whether the upstream said the stream is complete (OpenAI's `data: [DONE]`): the relay stops
   * reading there, and anything the upstream sends after it is never relayed.
   */
  ended?(): boolean;
  /** Oddities of the stream worth keeping in the generation record (`detail.warnings`). */
  warnings?(): string[];
  /**
   * The usage the upstream has reported so far (cumulative, tokens; `source: 'upstream'`), for
   * a stream the client cancels before its final usage part: Anthropic
   * reports the input counts in `message_start`, before any content. Null when nothing was
   * reported yet. Kinds whose streams report usage only at the end leave it out.
   */
  usage?(): Usage | null;
}

/** Which upstream operation a call performs. */
export type UpstreamOperation = 'chat' | 'text-completion' | 'embeddings' | 'responses';

/**
 * What a provider kind must implement. Adapters are stateless: pure conversions at the edge
 * between the OpenAI chat format and the provider's wire format.
 */
export interface ProviderAdapter {
  /**
   * Build the upstream chat call. May be async (e.g. Gemini fetches image URLs to inline them).
   * @throws GatewayError for requests the provider cannot take (`param` set).
   */
  buildChatCall(req: ChatRequest, target: ResolvedEndpoint, stream: boolean): UpstreamCall | Promise<UpstreamCall>;
  /** Build a native text-completion call, for endpoints with `supports_text_completions`. */
  buildCompletionCall?(req: CompletionRequest, target: ResolvedEndpoint, stream: boolean): UpstreamCall | Promise<UpstreamCall>;
  /**
   * Build a native Responses API call (`POST /responses`) from the client's validated Responses
   * request, for endpoints with `supports_responses` (the `openai` kind).
   */
  buildResponsesCall?(req: Record<string, unknown>, target: ResolvedEndpoint, stream: boolean): UpstreamCall | Promise<UpstreamCall>;
  /**
   * Build one upstream embeddings call for `req` (its `input` already cut to the endpoint's
   * `max_embedding_inputs`); present on kinds that serve embeddings.
   */
  buildEmbeddingCall?(req: EmbeddingRequest, target: ResolvedEndpoint): UpstreamCall | Promise<UpstreamCall>;
  /**
   * Parse a 2xx embeddings response body (already JSON-parsed).
   * @throws GatewayError `upstream_invalid_response` when it holds no vectors.
   */
  parseEmbeddingResult?(body: unknown): EmbeddingResult;
  /**
   * Parse a complete 2xx response body (already JSON-parsed).
   * @throws GatewayError when the body is an error or not a valid response.
   */
  parseResult(body: unknown, operation: UpstreamOperation): ChatResult;
  /** A new stream transform for one streamed response. */
  createStreamTransform(operation: UpstreamOperation): StreamTransform;
  /** Turn a non-2xx upstream response into a catalog error (keeps the upstream message). */
  parseErrorResponse(status: number, headers: Record<string, string | string[] | undefined>, bodyText: string): GatewayError;
}
