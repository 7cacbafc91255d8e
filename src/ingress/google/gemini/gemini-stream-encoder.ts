import type { GeminiPart } from '../../../providers/gemini/gemini-wire-types.js';
import type { ResponseIdentity, StreamEncoder } from '../../types.js';
import { geminiErrorBody } from '../error-envelope.js';
import { functionArgs, geminiFinishReason, geminiResponse, geminiSignatures, geminiUsageMetadata } from './gemini-response-body.js';

/** How a Gemini stream is framed: Server-Sent Events (`alt=sse`) or one JSON array streamed element by element. */
export type GeminiStreamFraming = 'sse' | 'json';

/**
 * `streamGenerateContent` chunks from internal stream parts. Each chunk is a whole
 * `GenerateContentResponse` of candidate 0 (`modelVersion`, `responseId` = the generation id):
 * text and thought text (`thought: true`) as they come; a function call as one part, sent
 * whole when its arguments are complete (Gemini never splits `args`), with its Gemini thought
 * signature on it; the last chunk carries `finishReason` and `usageMetadata`. Framing:
 * `alt=sse` → `data: <json>\r\n\r\n` events (no `[DONE]`, as Google sends); otherwise the JSON
 * array Google streams (`[`, elements joined by `,`, `]`). A failure is an element or event
 * `{"error":{code, message, status, details}}` (Gemini's envelope, the catalog's code in `details`).
 * On the native lane to a `gemini` endpoint the upstream's own `alt=sse` events are relayed: as
 * received for `alt=sse`, and as the array's elements, byte for byte, through `relay` otherwise.
 * @see https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
 */
export function geminiStreamEncoder(ident: ResponseIdentity, framing: GeminiStreamFraming): StreamEncoder {
  let sent = 0;
  /** Whether the array's `[` is out (an error before any output opens it too). */
  let opened = false;
  const open = (): string => {
    if (framing === 'sse' || opened) return '';
    opened = true;
    return '[';
  };
  /** One element of the JSON array: `[` before the first, `,\r\n` before the others. */
  const element = (json: string): string => open() + (sent++ === 0 ? '' : ',\r\n') + json;
  const frame = (body: unknown): string => {
    const json = JSON.stringify(body);
    if (framing === 'sse') return `data: ${json}\r\n\r\n`;
    return element(json);
  };
  /** The function call whose arguments are still arriving. */
  let pending: { id: string; name: string; args: string; signature?: string } | undefined;
  const chunk = (parts: GeminiPart[]): string => (parts.length === 0 ? '' : frame(geminiResponse(ident, parts, undefined, undefined)));
  const takePending = (): GeminiPart[] => {
    if (!pending) return [];
    const p: GeminiPart = { functionCall: { id: pending.id, name: pending.name, args: functionArgs(pending.args) } };
    if (pending.signature) p.thoughtSignature = pending.signature;
    pending = undefined;
    return [p];
  };
  return {
    ...(framing === 'json' ? { relay: element } : {}),
    start: open,
    part(p) {
      switch (p.type) {
        case 'text':
        case 'refusal':
          return chunk([...takePending(), { text: p.text }]);
        case 'reasoning':
          return chunk([...takePending(), { text: p.text, thought: true }]);
        case 'reasoning-details': {
          const parts: GeminiPart[] = [];
          for (const d of geminiSignatures(p.details)) {
            if (pending && (d.id === undefined || d.id === pending.id)) pending.signature = d.data!;
            else parts.push({ text: '', thoughtSignature: d.data! });
          }
          return chunk(parts);
        }
        case 'tool-call-start': {
          const before = takePending();
          pending = { id: p.id, name: p.name, args: '' };
          return chunk(before);
        }
        case 'tool-call-delta':
          if (pending) pending.args += p.argumentsDelta;
          return '';
        case 'block-start':
        case 'block-end':
          return '';
      }
    },
    finish: (reason, usage) => {
      const parts = takePending();
      return frame(geminiResponse(ident, parts.length ? parts : [{ text: '' }], geminiFinishReason(reason), geminiUsageMetadata(usage)));
    },
    error: (err, requestId) => frame(geminiErrorBody(err, requestId)),
    done: () => (framing === 'json' ? `${open()}]` : ''),
  };
}
