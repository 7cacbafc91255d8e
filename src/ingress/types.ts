import type { ClientApi } from '../core/client-api.js';
import type { ChatRequest, FinishReason, Usage } from '../core/chat-types.js';
import type { ChatResult } from '../core/chat-result.js';
import type { EmbeddingRequest, EmbeddingResult } from '../core/embedding-types.js';
import type { OutputPart } from '../core/stream-part.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { PlannedEndpoint } from '../routing/route-plan.js';
import type { StoredResponse, StoredResponseStore } from '../store/stored-responses.js';
import type { ModelConfig } from '../config/schema.js';
import type { ApiLists } from './body-lists.js';

/**
 * The client APIs the gateway serves, one ingress adapter each; the value of a generation
 * record's `api` (declared in core/client-api.ts, so providers can key their native lanes by it).
 * Adding an API: a folder under src/ingress/<vendor>/<api>/ with an adapter that declares its
 * routes and properties, a name in core/client-api.ts, an entry in registry.ts; a provider that
 * serves it natively adds a lane in its folder (providers/<kind>/native/, keyed in its adapter's
 * `native`).
 */
export type { ClientApi } from '../core/client-api.js';

/**
 * What serves a declared route; the server (src/server/routes/) has one generic handler per
 * operation, which reads what is API-specific from the adapter:
 * - `generate`: the request goes through the pipeline (the API's main `POST`);
 * - `count-tokens`: the prompt's input tokens (Messages' `count_tokens`);
 * - `get-response` / `delete-response`: a stored response by its `:id` ({@link StoredResponseShapes});
 * - `list-models` / `get-model`: the catalog in the API's own shape ({@link ModelListShape}; the
 *   model of `get-model` is the path's wildcard).
 */
export type ApiOperation = 'generate' | 'count-tokens' | 'get-response' | 'delete-response' | 'list-models' | 'get-model';

/**
 * One route of a client API, as data (ingress/ never imports the HTTP server). A path without
 * parameters belongs to its API: the other methods answer 405 `method_not_allowed` (`use POST
 * for /v1/messages`), and its errors use the API's envelope.
 */
export interface ApiRoute {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Fastify path syntax, e.g. `/v1/messages/count_tokens`, `/v1/responses/:id`. */
  readonly path: string;
  readonly operation: ApiOperation;
  /** Who may call it (server/route-auth.ts `RouteAccess`): every API route needs a key. */
  readonly access: 'key';
  /**
   * Google's custom method (AIP-136): the path ends in `*`, whose value is `<resource>:<action>`
   * (`/v1beta/models/gemini-2.5-pro:generateContent`, the resource may hold slashes); the server
   * serves every action of one wildcard path from one route and dispatches on it.
   */
  readonly action?: string;
  /** The key may also come as the `key` query parameter (Google's APIs); it is never logged. */
  readonly keyInQuery?: boolean;
  /**
   * The body the operation receives, from the client's body and the URL (Gemini: the model and
   * the stream flag are in the path). Unset: the client's body.
   */
  requestBody?(body: unknown, url: { resource: string; action: string; query: Readonly<Record<string, unknown>> }): unknown;
}

/**
 * The API's shapes of a stored response (Responses' `GET` / `DELETE /v1/responses/{id}`): the
 * server's generic handlers load and delete, the adapter says what the client reads.
 */
export interface StoredResponseShapes {
  /** The body of `GET`: a complete response object from the kept one. */
  body(stored: Record<string, unknown>): unknown;
  /** The body of a successful `DELETE`. */
  deleted(id: string): unknown;
  /** The 404 of an id that is not kept for this key. */
  notFound(id: string): GatewayError;
}

/**
 * The catalog in an API's own model-list shape (Anthropic's `GET /v1/models`), for requests
 * that ask for it; others get the gateway's OpenAI/OpenRouter list.
 */
export interface ModelListShape {
  /** Whether a `GET /v1/models` request wants this shape (Anthropic: it sends `anthropic-version`). */
  wants(headers: Readonly<Record<string, string | string[] | undefined>>): boolean;
  /**
   * The list body of the models the key may see, paged by the request's query.
   * @throws GatewayError `invalid_request` for a bad query parameter.
   */
  body(models: readonly ModelConfig[], query: Readonly<Record<string, string | undefined>>): unknown;
  /** One model in this shape (the API's `get-model` route), under `name`: the id or the alias asked for (default the id). */
  one?(model: ModelConfig, name?: string): unknown;
}

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
   * The pass-through lane in the API's own framing: one upstream SSE event's `data` (the
   * upstream's bytes, not re-encoded) as this API's stream writes it — the Gemini API's streamed
   * JSON array takes `[`, then elements joined by `,\r\n` ({@link done} writes the `]`). Unset:
   * the events are relayed as SSE, as received.
   */
  relay?(data: string): string;
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
  /** The route, e.g. `/v1/chat/completions` (POST; the `generate` operation). */
  readonly path: string;
  /**
   * The API's other routes (Messages' `count_tokens`, Responses' stored responses); the
   * registry adds `POST {@link path}` (`generate`) before them.
   */
  readonly routes?: readonly ApiRoute[];
  /**
   * `gen_ai.operation.name` of this API's generations (OpenTelemetry GenAI conventions:
   * `chat`, `text_completion`, `embeddings`).
   * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/
   */
  readonly genAiOperation: 'chat' | 'text_completion' | 'embeddings';
  /** Where this API's bounded lists are in its body, checked before `parse` (body-bounds.ts). */
  readonly bodyLists: ApiLists;
  /**
   * The output limit's field in this API (`max_tokens`, Responses' `max_output_tokens`), for
   * warnings and `param`; `chat` the field the request sent (the internal request's own shape).
   */
  outputLimitParam(chat: ChatRequest): string;
  /**
   * What routing measures of this request, when not its messages (embeddings: the longest
   * input): a `context_length_exceeded` refusal names `param` and says `subject` does not fit.
   */
  readonly contextMeasure?: { readonly param: string; readonly subject: string };
  /**
   * Path prefixes whose errors outside the pipeline (auth, 404s) answer in this API's envelope,
   * besides its static paths and its custom-method paths (Gemini: `/v1beta/`).
   */
  readonly pathPrefixes?: readonly string[];
  /** The stored responses this API serves (Responses), for its `get-response` / `delete-response` routes. */
  readonly storedResponses?: StoredResponseShapes;
  /** The catalog in this API's own list shape (Anthropic), for `GET /v1/models`. */
  readonly modelList?: ModelListShape;
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
  /** The output limit named by `reasoning_exhausted_output_limit` ("raise X"). */
  readonly reasoningLimitParam: string;
  createStreamEncoder(ident: ResponseIdentity, req: Req): StreamEncoder;
  /** The non-streamed response body; `costUsd` in USD. */
  responseBody(ident: ResponseIdentity, result: ChatResult, usage: Usage, costUsd: number, req: Req): unknown;
  /**
   * The API's own `count-tokens` route (Gemini's `countTokens`; unset: Messages' `count_tokens`
   * shapes): the request of a count, and the body of its answer (`count`: input tokens).
   */
  readonly countTokens?: { parse(body: unknown): Req; body(count: number): unknown };
  /**
   * A stream of this request framed otherwise than Server-Sent Events (Gemini without
   * `alt=sse`: one JSON array): its `content-type` and what it writes while it waits for its
   * first content; undefined (or unset) for SSE.
   */
  streamFraming?(req: Req): { contentType: string; keepAlive: string } | undefined;
  /** What a stream writes while it waits for its first content; default an SSE comment. */
  readonly keepAlive?: string;
  /**
   * Whether a body names configured MCP servers as tools (Responses `{"type": "mcp"}`): such a
   * request is served by the gateway's tool loop (pipeline/stages/mcp-tool-loop.ts), each model
   * turn a request of this API. Absent: the API has no such tool.
   */
  readonly hostsMcpTools?: (body: unknown) => boolean;
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
  /** The response body; `model` is the catalog model that answered, `costUsd` in USD, `req` the validated request. */
  embeddingBody(model: string, result: EmbeddingResult, usage: Usage, costUsd: number, req: Req): unknown;
}

/** One client API; `output` tells which pipeline path serves it. */
export type IngressAdapter<Req = unknown> = GenerationIngress<Req> | EmbeddingIngress<Req>;
