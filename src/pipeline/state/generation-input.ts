import type { ChatRequest } from '../../core/chat-types.js';
import type { IngressAdapter } from '../../ingress/types.js';

/** What the client asked for, as the pipeline carries it through every stage. */
export interface GenerationInput {
  /** The client API the request came in by. */
  readonly ingress: IngressAdapter;
  /** The validated request in that API's shape (what a native lane sends on). */
  readonly request: unknown;
  /** The same request in the internal format (routing, limits, translation). */
  readonly chat: ChatRequest;
  readonly stream: boolean;
  /** The client headers the API reads (its `forwardHeaders` and `sessionHeaders`), lower-case names. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * The output limit's field in the client's API (`max_tokens` for Messages and completions,
 * `max_output_tokens` for Responses, the larger of the two fields for chat), for warnings and
 * `param`.
 */
export function outputLimitParam(input: GenerationInput): string {
  return input.ingress.outputLimitParam(input.chat);
}
