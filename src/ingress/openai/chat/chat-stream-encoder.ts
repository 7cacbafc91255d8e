import type { StreamEncoder, ResponseIdentity } from '../../types.js';
import { usageToJson } from '../usage-json.js';

const DONE = 'data: [DONE]\n\n';

/**
 * `chat.completion.chunk` events: `data: <json>\n\n` each, `data: [DONE]` last. The final chunk
 * before `[DONE]` carries `usage` (SPEC §2.2); a failed stream ends with one chunk carrying
 * `error` and `finish_reason: "error"`. Block markers write nothing.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
export function chatStreamEncoder(ident: ResponseIdentity): StreamEncoder {
  const head = `{"id":${JSON.stringify(ident.id)},"object":"chat.completion.chunk","created":${ident.created},"model":${JSON.stringify(ident.model)},`;
  const delta = (d: unknown, finish: string | null = null): string =>
    `data: ${head}"choices":[{"index":0,"delta":${JSON.stringify(d)},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  return {
    start: () => delta({ role: 'assistant', content: '' }),
    part(p) {
      switch (p.type) {
        case 'text':
          return delta({ content: p.text });
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
    finish: (reason, usage, costUsd) => delta({}, reason) + `data: ${head}"choices":[],"usage":${JSON.stringify(usageToJson(usage, costUsd))}}\n\n`,
    error: (err, requestId, usage, costUsd) =>
      `data: ${JSON.stringify({
        id: ident.id,
        object: 'chat.completion.chunk',
        created: ident.created,
        model: ident.model,
        choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }],
        usage: usageToJson(usage, costUsd),
        error: err.toBody(requestId),
      })}\n\n`,
    done: () => DONE,
  };
}
