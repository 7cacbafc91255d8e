import type { StreamEncoder, ResponseIdentity } from '../../types.js';
import { usageToJson } from '../usage-json.js';

const DONE = 'data: [DONE]\n\n';

/**
 * `text_completion` stream events (legacy completions): text only (reasoning and tool calls are
 * not written; a `tool_calls` finish reads `stop`), usage last, `data: [DONE]`.
 * @see https://platform.openai.com/docs/api-reference/completions/object
 */
export function completionStreamEncoder(ident: ResponseIdentity): StreamEncoder {
  const head = `{"id":${JSON.stringify(ident.id)},"object":"text_completion","created":${ident.created},"model":${JSON.stringify(ident.model)},`;
  const text = (t: string, finish: string | null = null): string =>
    `data: ${head}"choices":[{"index":0,"text":${JSON.stringify(t)},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  return {
    start: () => '',
    part: (p) => (p.type === 'text' ? text(p.text) : ''),
    finish: (reason, usage, costUsd) =>
      text('', reason === 'tool_calls' ? 'stop' : reason) + `data: ${head}"choices":[],"usage":${JSON.stringify(usageToJson(usage, costUsd))}}\n\n`,
    error: (err, requestId, usage, costUsd) =>
      `data: ${JSON.stringify({
        id: ident.id,
        object: 'text_completion',
        created: ident.created,
        model: ident.model,
        choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'error' }],
        usage: usageToJson(usage, costUsd),
        error: err.toBody(requestId),
      })}\n\n`,
    done: () => DONE,
  };
}
