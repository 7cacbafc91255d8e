import type { StreamEncoder, ResponseIdentity } from '../../types.js';
import { chunkHead, DONE, errorChunk, usageChunk } from '../openai-chunks.js';

const ERROR_CHOICE = { text: '' };

/**
 * `text_completion` stream events (legacy completions): text only (reasoning and tool calls are
 * not written; a `tool_calls` finish reads `stop`), usage last, `data: [DONE]`.
 * @see https://platform.openai.com/docs/api-reference/completions/object
 */
export function completionStreamEncoder(ident: ResponseIdentity): StreamEncoder {
  const head = chunkHead('text_completion', ident);
  const text = (t: string, finish: string | null = null): string =>
    `data: ${head}"choices":[{"index":0,"text":${JSON.stringify(t)},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  return {
    start: () => '',
    part: (p) => (p.type === 'text' ? text(p.text) : ''),
    finish: (reason, usage, costUsd) => text('', reason === 'tool_calls' ? 'stop' : reason) + usageChunk(head, usage, costUsd),
    error: (err, requestId, usage, costUsd) => errorChunk(head, ERROR_CHOICE, err, requestId, usage, costUsd),
    done: () => DONE,
  };
}
