import type { ClientApi } from '../core/client-api.js';
import type { ChatRequest, FinishReason, Usage } from '../core/chat-types.js';
import type { ChatResult } from '../core/chat-result.js';
import type { EmbeddingRequest, EmbeddingResult } from '../core/embedding-types.js';
import type { OutputPart } from '../core/stream-part.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { PlannedEndpoint } from '../routing/route-plan.js';
import type { StoredResponse, StoredResponseStore } from '../store/stored-responses.js';

/**
 * The client APIs the gateway serves, one ingress adapter each; the value of a generation
 * record's `api` (declared in core/client-api.ts, so providers can key their native lanes by it).
 * Adding an API: a folder under src/ingress/<vendor>/<api>/ with an adapter, a name in
 * core/client-api.ts, an entry in registry.ts; a provider that serves it natively adds a lane in
 * its folder (providers/<kind>/native/, keyed in its adapter's `native`).
 */
export type { ClientApi } from '../core/client-api.js';

/** Identity shared by a response and every event of its stream. `created` is Unix seconds. */
export interface ResponseIdentity {
  id: string;
  created: number;
  model: string;
  /** The gateway's estimate of the prompt's tokens, for APIs that announce it before the answer. */
  promptTokens?: number;
}

/**
 * Turns the internal stream parts of one response into this API's server-sent events: the
 * inverse of a provider's stream transform (src/providers/<kind>/<kind>-stream-transform.ts).
 * Every method returns the text to write ('' for nothing); one encoder per response.
 */
export interface StreamEncoder {
  /** The opening event(s), written when the first content part arrives. */
  start(): string;
  /** One content part (text, reasoning, refusal, tool call, block marker). */
  part(part: OutputPart): string;
  /** The end of a successful answer: the finish reason and the usage (`costUsd`: USD). */
  finish(reason: Exclude<FinishReason, 'error'>, usage: Usage | null, costUsd: number | undefined): string;
  /**
   * The event(s) of a stream that fails after it started (SPEC §2.2: never end silently), with
   * the usage seen so far; `requestId` goes into the error envelope.
   */
  error(err: GatewayError, requestId: string, usage: Usage | null, costUsd: number | undefined): string;
  /** The last bytes of the stream (OpenAI: `data: [DONE]`). */
  done(): string;
  /**
   * The complete response object after `finish` or `error`, for APIs that keep responses
   * (Responses' `store`); undefined before.
   */
  response?(): unknown;
}

/**
 * What an API's `prepare` step may read: the calling key, the request's retention, and the
 * stored responses (Responses' `previous_response_id`).
 */
export interface PrepareContext {
  /** The calling key's id; null for the admin key. */
  readonly keyId: string | null;
  /** The request's retention: `none`, or days. */
  readonly retention: 'none' | number;
  readonly responses: StoredResponseStore;
}

/**
 * What every client API adapter has: route, request schema (`parse`), conversion to the internal
 * request (`toChat`: routing, limits and translation work on it), error envelope. Adapters are
 * stateless; the pipeline (src/pipeline/) runs every API through the same stages. `Req` is the
 * API's validated request.
 */
interface IngressAdapterBase<Req> {
  /** Record value and lane key. */
  readonly api: ClientApi;
  /** The route, e.g. `/v1/chat/completions` (POST). */
  readonly path: string;
  /**
   * Validate a request body (already JSON-parsed).
   * @throws GatewayError `invalid_json` / `invalid_request` with `param` naming the first bad field.
   */
  parse(body: unknown): Req;
  /** The internal chat request this request is served as (routing, limits, translation). */
  toChat(req: Req): ChatRequest;
  /**
   * Narrow the route plan to the endpoints that can serve this request (legacy-only parameters,
   * a capability such as embeddings).
   * @throws GatewayError when no planned endpoint can.
   */
  restrictPlan?(req: Req, plan: PlannedEndpoint[]): PlannedEndpoint[];
  /** The request text kept in the generation record (when retention allows). */
  recordedRequest(req: Req): unknown;
  /** The error envelope of a failed request (HTTP body; the status comes from the catalog). */
  errorBody(err: GatewayError, requestId: string): unknown;
  /**
   * The HTTP status of `no_endpoint_available` when every endpoint of an existing model was
   * excluded by what the request asked (output limit, tools, context, provider preferences …);
   * unset keeps the catalog's 404. Anthropic's clients read a 404 as "the model does not
   * exist" (Claude Code: "the model may not exist"), so the Messages API answers 400.
   */
  readonly unservableStatus?: number;
}

/**
 * A client API that generates text (chat, legacy completions, later Messages and Responses):
 * its roles mirror a provider adapter's — plus stream encoding and the response body.
 */
export interface GenerationIngress<Req = unknown> extends IngressAdapterBase<Req> {
  readonly output: 'generation';
  /**
   * Whether the stream encoder wants `block-start` / `block-end` markers around content blocks
   * (block-structured event formats); the pipeline frames parts only for those.
   */
  readonly contentBlocks: boolean;
  createStreamEncoder(ident: ResponseIdentity, req: Req): StreamEncoder;
  /** The non-streamed response body; `costUsd` in USD. */
  responseBody(ident: ResponseIdentity, result: ChatResult, usage: Usage, costUsd: number, req: Req): unknown;
  /** What a stream writes while it waits for its first content; default an SSE comment. */
  readonly keepAlive?: string;
  /**
   * Client request headers (lower case) handed to a provider's native lane for this API
   * (providers/types.ts `NativeLane.buildCall`, e.g. `anthropic-beta`).
   */
  readonly forwardHeaders?: readonly string[];
  /**
   * Client request headers (lower case) that may name the generation's session (agent clients:
   * Claude Code's `x-claude-code-session-id`, Codex's `session-id`), handed to
   * {@link clientSession}; never forwarded upstream.
   */
  readonly sessionHeaders?: readonly string[];
  /**
   * The session an agent client names outside the gateway fields — one of its
   * {@link sessionHeaders}, or a body field (Claude Code's `metadata.user_id`) — and where it
   * came from (`param`, named in a 400 when the value breaks `op.session`'s rule). The pipeline
   * uses it as `op.session` only when the request does not set `op.session` itself; undefined
   * when the client names none.
   */
  clientSession?(req: Req, headers: Readonly<Record<string, string>>): { value: string; param: string } | undefined;
  /**
   * The pass-through lane's answer in its other form, for the response cache: the body a
   * relayed stream adds up to, and the stream events of a relayed body (Messages: the
   * upstream's own events and message, nothing translated). Without it a cached pass-through
   * answer replays in the form it was relayed in only.
   * @throws Error `body` when the events are not a complete stream of this API.
   */
  readonly relayedForms?: { body(events: string): unknown; events(body: unknown): string };
  /**
   * What translating this request through the internal format loses (fields and tools it has
   * no place for), kept in the record's warnings of attempts in the translate lane.
   */
  translationWarnings?(req: Req): string[];
  /**
   * An async step after `parse`, before the internal request is built (Responses: load the
   * `previous_response_id` conversation, settle `store` against the retention).
   * @throws GatewayError refusing the request (recorded like a validation failure).
   */
  prepare?(req: Req, ctx: PrepareContext): Promise<Req>;
  /**
   * What to keep of a finished response (Responses with `store`), given the body or final
   * stream object sent; undefined keeps nothing. The pipeline stores it only when the
   * request's retention keeps text, before the client sees the end of the response.
   */
  keep?(req: Req, response: unknown): StoredResponse | undefined;
}

/** A client API that returns vectors (OpenAI embeddings): never streamed. */
export interface EmbeddingIngress<Req = unknown> extends IngressAdapterBase<Req> {
  readonly output: 'embeddings';
  /** The internal embeddings request (what the upstream calls carry). */
  toEmbeddingRequest(req: Req): EmbeddingRequest;
  /** The response body; `model` is the catalog model that answered, `costUsd` in USD. */
  embeddingBody(model: string, result: EmbeddingResult, usage: Usage, costUsd: number): unknown;
}

/** One client API; `output` tells which pipeline path serves it. */
export type IngressAdapter<Req = unknown> = GenerationIngress<Req> | EmbeddingIngress<Req>;
