import type { FinishReason } from '../../../core/chat-types.js';
import type { ErrorBody } from '../../../errors/gateway-error.js';
import type { StreamPart } from '../../../providers/types.js';
import type { UsageJson } from '../usage-json.js';

/** Shared identity of every chunk of one response. */
export interface ChunkIdentity {
  id: string;
  created: number;
  model: string;
}

/**
 * Turns stream parts into the SSE events a client receives. One encoder per API shape; both
 * emit `data: <json>\n\n` strings and end with `data: [DONE]`.
 */
export interface ChunkEncoder {
  /** The opening event (chat: the assistant role), or '' when the shape has none. */
  start(): string;
  /** One content part (text, reasoning, refusal, tool call); '' when it has no output. */
  part(part: Exclude<StreamPart, { type: 'finish' | 'usage' | 'error' }>): string;
  finish(reason: Exclude<FinishReason, 'error'>): string;
  usage(usage: UsageJson): string;
  /** The error event of a failed stream (SPEC §2.2), carrying the usage seen so far. */
  error(error: ErrorBody, usage: UsageJson): string;
  done(): string;
}

const DONE = 'data: [DONE]\n\n';
const event = (obj: unknown): string => `data: ${JSON.stringify(obj)}\n\n`;

/**
 * `chat.completion.chunk` events.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 */
export function chatChunkEncoder(ident: ChunkIdentity): ChunkEncoder {
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
      }
    },
    finish: (reason) => delta({}, reason),
    usage: (usage) => `data: ${head}"choices":[],"usage":${JSON.stringify(usage)}}\n\n`,
    error: (error, usage) =>
      event({
        id: ident.id,
        object: 'chat.completion.chunk',
        created: ident.created,
        model: ident.model,
        choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: 'error' }],
        usage,
        error,
      }),
    done: () => DONE,
  };
}

/**
 * `text_completion` stream events (legacy completions).
 * @see https://platform.openai.com/docs/api-reference/completions/object
 */
export function completionChunkEncoder(ident: ChunkIdentity): ChunkEncoder {
  const head = `{"id":${JSON.stringify(ident.id)},"object":"text_completion","created":${ident.created},"model":${JSON.stringify(ident.model)},`;
  const text = (t: string, finish: string | null = null): string =>
    `data: ${head}"choices":[{"index":0,"text":${JSON.stringify(t)},"logprobs":null,"finish_reason":${finish === null ? 'null' : JSON.stringify(finish)}}]}\n\n`;
  return {
    start: () => '',
    part: (p) => (p.type === 'text' ? text(p.text) : ''),
    finish: (reason) => text('', reason === 'tool_calls' ? 'stop' : reason),
    usage: (usage) => `data: ${head}"choices":[],"usage":${JSON.stringify(usage)}}\n\n`,
    error: (error, usage) =>
      event({
        id: ident.id,
        object: 'text_completion',
        created: ident.created,
        model: ident.model,
        choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'error' }],
        usage,
        error,
      }),
    done: () => DONE,
  };
}
