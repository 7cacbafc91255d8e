import type { ChatRequest, Usage } from '../core/chat-types.js';
import type { ClientApi } from '../core/client-api.js';
import type { ChatResult } from '../core/chat-result.js';
import type { EmbeddingRequest, EmbeddingResult } from '../core/embedding-types.js';
import type { StreamPart } from '../core/stream-part.js';
import type { EndpointConfig, ModelConfig, OutputLimitPolicy, ProviderConfig, TimeoutsConfig } from '../config/schema.js';
import type { GatewayError } from '../errors/gateway-error.js';

/**
 * What a provider adapter needs of the endpoint it calls: one model served by one provider,
 * resolved from config. Routing plans with the same shape (`ResolvedEndpoint`,
 * routing/resolved-endpoint.ts); providers name only this one, as they sit below routing.
 */
export interface ProviderTarget {
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
  /**
   * How a streamed answer is framed: `sse` (the default: Server-Sent Events) or
   * `aws-eventstream` (AWS's binary event stream, `application/vnd.amazon.eventstream`:
   * Bedrock's ConverseStream and InvokeModelWithResponseStream), whose messages reach the
   * stream transform as `{event, data}` (the `:event-type` header, or `:exception-type` for an
   * exception, and the payload text).
   */
  streamFraming?: StreamFraming;
}

/** The stream framings the attempt reads (see {@link UpstreamCall.streamFraming}). */
export type StreamFraming = 'sse' | 'aws-eventstream';

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
  /**
   * A pass-through lane's event as the client's API frames it, when the upstream wraps it
   * (Bedrock's InvokeModelWithResponseStream: a `chunk` event whose `bytes` are the base64 of
   * one Anthropic event → that event, named by its `type`). Kinds whose events are the API's own
   * leave it out (relayed as received).
   */
  relayAs?(event: { data: string; event?: string | undefined }): { data: string; event?: string | undefined };
  /** Oddities of the stream worth keeping in the generation record (`detail.warnings`). */
  warnings?(): string[];
  /**
   * The usage the upstream has reported so far (cumulative, tokens; `source: 'upstream'`), for
   * a stream the client cancels before its final usage part: Anthropic
   * reports the input counts in `message_start`, before any content. Null when nothing was
   * reported yet. Kinds whose streams report usage only at the end leave it out.
   */
  usage?(): Usage | null;
  /**
   * What the upstream said about the stream beyond the generation (Azure's content-filter
   * results), read once the stream ended, for the generation record's `detail.provider_metadata`;
   * null when nothing. Kinds with none leave it out.
   */
  providerMetadata?(): Record<string, unknown> | null;
}

/** Which upstream operation a call performs. */
export type UpstreamOperation = 'chat' | 'text-completion' | 'embeddings' | 'responses';

/**
 * An endpoint flag (`EndpointConfig`) a native lane needs set on the endpoint before it is chosen:
 * the endpoint serves that API itself (`/completions`, `/responses`).
 */
export type EndpointCapability = 'supports_text_completions' | 'supports_responses';

/**
 * One native pairing (client API → this provider kind, "same format in and out"): the upstream
 * call is built from the client's own validated request (`Req`: its body as the ingress parsed
 * it) with only the gateway's edits (model name, output limit, dropped parameters), so nothing
 * the internal format cannot carry is lost. pipeline/attempt/lane.ts chooses it.
 */
export interface NativeLane<Req = unknown> {
  readonly native: true;
  /** Which response format the adapter's `parseResult` / `createStreamTransform` read. */
  readonly operation: UpstreamOperation;
  /**
   * The client receives the upstream's own response (its stream events or body) while the
   * provider's parser still reads usage and errors from it.
   */
  readonly relayUpstream?: boolean;
  /**
   * Whether a stream of this request is relayed as the upstream's events (with
   * {@link relayUpstream}); false has the API's encoder write it from the parsed events. Unset:
   * always. (An API whose stream is not SSE frames the relayed events itself: its encoder's
   * `relay`, e.g. the Gemini API's streamed JSON array.)
   */
  relaysStream?(req: Req): boolean;
  /** The endpoint flag this lane needs; unset: every endpoint of the kind serves it. */
  readonly requires?: EndpointCapability;
  /**
   * Whether this endpoint's model speaks the lane's format (Bedrock: only Anthropic models take
   * the Messages body on InvokeModel); unset: every endpoint the flag allows. An endpoint it
   * refuses is translated.
   */
  readonly servesModel?: (target: ProviderTarget) => boolean;
  /**
   * Build the upstream call. `headers` are the client's headers the API forwards (its
   * `forwardHeaders`, e.g. `anthropic-beta`), lower-case names.
   * @throws GatewayError for requests the provider cannot take (`param` set).
   */
  buildCall(req: Req, target: ProviderTarget, stream: boolean, headers: Readonly<Record<string, string>>): UpstreamCall | Promise<UpstreamCall>;
  /**
   * The lane's token count call (`POST /v1/messages/count_tokens` → an `anthropic` upstream):
   * the same request without its output fields; the answer's JSON holds `input_tokens`.
   */
  countTokens?(req: Req, target: ProviderTarget, headers: Readonly<Record<string, string>>): UpstreamCall | Promise<UpstreamCall>;
  /**
   * The count in the answer of {@link countTokens} when it is not Anthropic's `input_tokens`
   * (Bedrock's CountTokens answers `{"inputTokens": n}`); undefined when it holds none.
   */
  readCount?(body: unknown): number | undefined;
}

/** A provider adapter's native lanes, by the client API each serves; an API not listed is translated. */
export type NativeLanes = Partial<Record<ClientApi, NativeLane>>;

/**
 * What a provider kind must implement: pure conversions at the edge between the OpenAI chat
 * format and the provider's wire format. The one state an adapter may hold is its provider's
 * credential (the cloud kinds' token source, `azure/azure-credentials.ts`, `vertex/vertex-credentials.ts`), built once
 * when the adapter is created (once per provider id, pipeline/state/runtime.ts) so its token
 * cache lives as long as the provider; the call builders are then async and await the cached token.
 */
export interface ProviderAdapter {
  /**
   * Build the upstream chat call. May be async (e.g. Gemini fetches image URLs to inline them).
   * @throws GatewayError for requests the provider cannot take (`param` set).
   */
  buildChatCall(req: ChatRequest, target: ProviderTarget, stream: boolean): UpstreamCall | Promise<UpstreamCall>;
  /**
   * The client APIs this kind serves natively (its folder's native/ files): `openai` completions
   * and Responses, `anthropic` Messages; every other API is translated through {@link buildChatCall}.
   */
  readonly native: NativeLanes;
  /**
   * Build one upstream embeddings call for `req` (its `input` already cut to the endpoint's
   * `max_embedding_inputs`); present on kinds that serve embeddings. Not a {@link NativeLane}:
   * it takes the internal embeddings request one batch at a time, never streams, is read by
   * {@link parseEmbeddingResult} rather than `parseResult`, and `gemini` translates it
   * (`batchEmbedContents`) rather than passing the client's body on.
   */
  buildEmbeddingCall?(req: EmbeddingRequest, target: ProviderTarget): UpstreamCall | Promise<UpstreamCall>;
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
  /**
   * What a 2xx answer's headers say for the generation record's `detail.provider_metadata`
   * (Bedrock's `x-amzn-RequestId` as `aws_request_id`), merged under what the body or stream
   * gave; null when nothing. Kinds with none leave it out.
   */
  responseMetadata?(headers: Record<string, string | string[] | undefined>): Record<string, unknown> | null;
  /** Turn a non-2xx upstream response into a catalog error (keeps the upstream message). */
  parseErrorResponse(status: number, headers: Record<string, string | string[] | undefined>, bodyText: string): GatewayError;
  /**
   * Secrets the adapter obtained at run time (Bedrock's AWS secret access key and session token
   * from the credential chain), to redact from upstream errors besides the config's keys; read
   * only when an error is made safe. Kinds whose secrets are all in the config leave it out.
   */
  runtimeSecrets?(): readonly string[];
}
