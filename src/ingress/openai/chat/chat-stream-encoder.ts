import type { StreamEncoder, ResponseIdentity } from '../../types.js';
import { chunkHead, DONE, errorChunk, usageChunk } from '../openai-chunks.js';

const ERROR_CHOICE = { delta: {} };

/**
 * `chat.completion.chunk` events: `data: <json>\n\n` each, `data: [DONE]` last. The final chunk
 * before `[DONE]` carries `usage` (SPEC §2.2); a failed stream ends with one chunk carrying
 * `error` and `finish_reason: "error"`. Block markers write nothing.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
export function chatStreamEncoder(ident: ResponseIdentity): StreamEncoder {
  const head = chunkHead('chat.completion.chunk', ident);
  const delta = (d: unknown, finish: string | null = null, logprobs?: Record<string, unknown>): string =>
    `data: ${head}"choices":[{"index":0,"delta":${JSON.stringify(d)},"logprobs":${logprobs ? JSON.stringify(logprobs) : 'null'},"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  // A text delta without logprobs, the most frequent chunk: the same bytes as `delta({ content })`,
  // from two strings built once per stream and the text's JSON string literal.
  const textBefore = `data: ${head}"choices":[{"index":0,"delta":{"content":`;
  const textAfter = '},"logprobs":null,"finish_reason":null}]}\n\n';
  return {
    start: () => delta({ role: 'assistant', content: '' }),
    part(p) {
      switch (p.type) {
        case 'text':
          if (!p.logprobs) return textBefore + JSON.stringify(p.text) + textAfter;
          return delta({ content: p.text }, null, p.logprobs);
        case 'reasoning':
          return delta({ reasoning: p.text });
        case 'reasoning-details':
          return delta({ reasoning_details: p.details });
        case 'refusal':
          return delta({ refusal: p.text });
        case 'tool-call-start':
          return delta({ tool_calls: [{ index: p.index, id: p.id, type: 'function', function: { name: p.name, arguments: '' } }] });
        case 'tool-call-delta':
          return delta({ tool_calls: [{ index: p.index, function: { arguments: p.argumentsDelta } }] });
        case 'block-start':
        case 'block-end':
          return '';
      }
    },
    finish: (reason, usage, costUsd) => delta({}, reason) + usageChunk(head, usage, costUsd),
    error: (err, requestId, usage, costUsd) => errorChunk(head, ERROR_CHOICE, err, requestId, usage, costUsd),
    done: () => DONE,
  };
}
