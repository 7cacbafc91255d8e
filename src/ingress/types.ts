import type { ChatRequest, FinishReason, Usage } from '../core/chat-types.js';
import type { ChatResult } from '../core/chat-result.js';
import type { OutputPart } from '../core/stream-part.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { PlannedEndpoint } from '../routing/plan.js';

/**
 * The client APIs the gateway serves, one ingress adapter each; the value of a generation
 * record's `api`. Adding an API: a folder under src/ingress/<vendor>/<api>/ with an adapter, a
 * name here, an entry in registry.ts, and a case in the pipeline's lane choice (pipeline/lane.ts).
 */
export type ClientApi = 'chat' | 'completions';

/** Identity shared by a response and every event of its stream. `created` is Unix seconds. */
export interface ResponseIdentity {
  id: string;
  created: number;
  model: string;
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
}

/**
 * One client API, with fixed roles that mirror a provider adapter's: request schema (`parse`),
 * conversion to the internal request (`toChat`), stream encoding, response body, error envelope.
 * Adapters are stateless; the pipeline (src/pipeline/) runs every API through the same stages.
 * `Req` is the API's validated request.
 */
export interface IngressAdapter<Req = unknown> {
  /** Record value and lane key. */
  readonly api: ClientApi;
  /** The route, e.g. `/v1/chat/completions` (POST). */
  readonly path: string;
  /**
   * Whether the stream encoder wants `block-start` / `block-end` markers around content blocks
   * (block-structured event formats); the pipeline frames parts only for those.
   */
  readonly contentBlocks: boolean;
  /**
   * Validate a request body (already JSON-parsed).
   * @throws GatewayError `invalid_json` / `invalid_request` with `param` naming the first bad field.
   */
  parse(body: unknown): Req;
  /** The internal chat request this request is served as (routing, limits, translation). */
  toChat(req: Req): ChatRequest;
  /**
   * Narrow the route plan for what only some endpoints can serve (e.g. legacy-only parameters).
   * @throws GatewayError when no planned endpoint can.
   */
  restrictPlan?(req: Req, plan: PlannedEndpoint[]): PlannedEndpoint[];
  /** The request text kept in the generation record (when retention allows). */
  recordedRequest(req: Req): unknown;
  createStreamEncoder(ident: ResponseIdentity): StreamEncoder;
  /** The non-streamed response body; `costUsd` in USD. */
  responseBody(ident: ResponseIdentity, result: ChatResult, usage: Usage, costUsd: number): unknown;
  /** The error envelope of a failed request (HTTP body; the status comes from the catalog). */
  errorBody(err: GatewayError, requestId: string): unknown;
}
