import type { Usage } from '../../core/chat-types.js';
import type { GatewayError } from '../../errors/gateway-error.js';
import type { ResponseIdentity } from '../types.js';
import { usageToJson } from './usage-json.js';

/** Pieces both OpenAI stream formats (chat and legacy completion chunks) are made of. */

/** The last event of an OpenAI stream. */
export const DONE = 'data: [DONE]\n\n';

/** The JSON text every chunk of a response starts with, up to `"choices"` (built once per response). */
export function chunkHead(object: 'chat.completion.chunk' | 'text_completion', ident: ResponseIdentity): string {
  return `{"id":${JSON.stringify(ident.id)},"object":"${object}","created":${ident.created},"model":${JSON.stringify(ident.model)},`;
}

/** The usage chunk (no choices) that ends every stream before `[DONE]`; `costUsd` in USD. */
export function usageChunk(head: string, usage: Usage | null, costUsd: number | undefined): string {
  return `data: ${head}"choices":[],"usage":${JSON.stringify(usageToJson(usage, costUsd))}}\n\n`;
}

/**
 * The chunk of a stream that fails after it started (SPEC §2.2): `finish_reason: "error"`, the
 * usage seen so far and the error envelope's body in `error`.
 */
export function errorChunk(head: string, choice: Record<string, unknown>, err: GatewayError, requestId: string, usage: Usage | null, costUsd: number | undefined): string {
  const rest = JSON.stringify({ choices: [{ index: 0, ...choice, logprobs: null, finish_reason: 'error' }], usage: usageToJson(usage, costUsd), error: err.toBody(requestId) });
  return `data: ${head}${rest.slice(1)}\n\n`;
}
