import type { ChatMessage, ContentPart, ReasoningDetail } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { GEMINI_REASONING_FORMAT } from './gemini-part-reader.js';
import type { GeminiBlob, GeminiContent, GeminiPart } from './gemini-wire-types.js';

/**
 * The documented value Gemini accepts in place of a lost thought signature (it skips the
 * check, at some cost in quality).
 * @see https://ai.google.dev/gemini-api/docs/thought-signatures
 */
export const SKIP_SIGNATURE_SENTINEL = 'skip_thought_signature_validator';

/** What the message conversion needs from outside. */
export interface ContentsOptions {
  /** Download an http(s) image URL (see `fetch-image.ts`); `param` names the request field. */
  fetchImage(url: string, param: string): Promise<GeminiBlob>;
  /**
   * Put {@link SKIP_SIGNATURE_SENTINEL} on the first function call of an assistant turn that
   * carries no thought signature (Gemini 3 refuses such turns with a 400).
   */
  signatureSentinel: boolean;
}

export interface ContentsResult {
  systemInstruction?: { parts: GeminiPart[] };
  contents: GeminiContent[];
  warnings: string[];
}

/** A turn before merging; `kind` keeps function responses apart from human text. */
interface Turn {
  role: 'user' | 'model';
  kind: 'message' | 'function-response';
  parts: GeminiPart[];
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const AUDIO_MIME: Record<string, string> = { wav: 'audio/wav', mp3: 'audio/mp3' };
const FILE_MIME: Record<string, string> = {
  pdf: 'application/pdf', txt: 'text/plain', md: 'text/markdown', csv: 'text/csv', html: 'text/html',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif',
  mp3: 'audio/mp3', wav: 'audio/wav', mp4: 'video/mp4',
};

const invalid = (param: string, message: string) => new GatewayError('invalid_request', `${param}: ${message}`, { param });

/** Normalise base64 text (whitespace and the URL-safe alphabet allowed); undefined when it is not base64. */
function cleanBase64(text: string): string | undefined {
  const s = text.replace(/\s+/g, '').replace(/-/g, '+').replace(/_/g, '/');
  return s !== '' && BASE64.test(s) ? s : undefined;
}

/**
 * Parse a `data:` URL into inline data (`data:<type>[;params][;base64],<data>`; data that is
 * not base64 is percent-decoded and re-encoded).
 * @see https://www.rfc-editor.org/rfc/rfc2397
 */
export function parseDataUrl(url: string): GeminiBlob | undefined {
  const m = /^data:([^,]*),(.*)$/s.exec(url);
  if (!m) return undefined;
  const meta = m[1]!.split(';').map((s) => s.trim());
  const mimeType = (meta[0] || 'text/plain').toLowerCase();
  if (meta.slice(1).some((p) => p.toLowerCase() === 'base64')) {
    const data = cleanBase64(m[2]!);
    return data === undefined ? undefined : { mimeType, data };
  }
  try {
    return { mimeType, data: Buffer.from(decodeURIComponent(m[2]!), 'utf8').toString('base64') };
  } catch {
    return undefined;
  }
}

/** Text of a string or of text parts (other part kinds ignored). */
function textsOf(content: string | ContentPart[] | null | undefined): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  const out: string[] = [];
  for (const p of content) {
    if (p.type === 'text') out.push(p.text);
    else if (p.type === 'refusal') out.push(p.refusal);
  }
  return out;
}

const textParts = (content: string | ContentPart[] | null | undefined): GeminiPart[] =>
  textsOf(content).filter((t) => t !== '').map((text) => ({ text }));

/**
 * The object a tool result becomes (`functionResponse.response` must be an object): a result
 * that parses as a JSON object is sent as that object; anything else is wrapped as
 * `{result: <the parsed JSON value>}`, or `{result: <the text>}` when it is not JSON.
 */
export function wrapToolResult(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    return { result: parsed };
  } catch {
    return { result: text };
  }
}

/** The Gemini thought signatures among an assistant message's reasoning details. */
function signaturesOf(details: ReasoningDetail[] | undefined, toolCallIds: Set<string>): { byId: Map<string, string>; loose: string[] } {
  const byId = new Map<string, string>();
  const loose: string[] = [];
  for (const d of details ?? []) {
    if (!d || d.type !== 'reasoning.encrypted') continue;
    const sig = d.data ?? d.signature;
    if (typeof sig !== 'string' || sig === '') continue;
    const ours = d.format === GEMINI_REASONING_FORMAT || (d.format === undefined && d.id !== undefined && toolCallIds.has(d.id));
    if (!ours) continue;
    if (d.id !== undefined && toolCallIds.has(d.id)) byId.set(d.id, sig);
    else loose.push(sig);
  }
  return { byId, loose };
}

/** Pending downloads: each fills its part's `inlineData` once done. */
interface ImageJob {
  part: GeminiPart;
  url: string;
  param: string;
}

function userParts(content: string | ContentPart[], i: number, jobs: ImageJob[]): GeminiPart[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  const parts: GeminiPart[] = [];
  content.forEach((p, j) => {
    const at = `messages[${i}].content[${j}]`;
    switch (p.type) {
      case 'text':
        if (p.text !== '') parts.push({ text: p.text });
        break;
      case 'image_url': {
        const url = p.image_url.url;
        const param = `${at}.image_url.url`;
        if (url.startsWith('data:')) {
          const blob = parseDataUrl(url);
          if (!blob) throw invalid(param, 'is not a valid base64 data URL');
          parts.push({ inlineData: blob });
        } else if (/^https?:\/\//i.test(url)) {
          const part: GeminiPart = {};
          jobs.push({ part, url, param });
          parts.push(part);
        } else {
          throw invalid(param, 'must be an http(s) URL or a data: URL');
        }
        break;
      }
      case 'input_audio': {
        const data = cleanBase64(p.input_audio.data);
        if (!data) throw invalid(`${at}.input_audio.data`, 'must be base64');
        const format = p.input_audio.format.toLowerCase();
        parts.push({ inlineData: { mimeType: AUDIO_MIME[format] ?? `audio/${format}`, data } });
        break;
      }
      case 'file': {
        const f = p.file;
        if (typeof f.file_data === 'string' && f.file_data !== '') {
          const param = `${at}.file.file_data`;
          let blob: GeminiBlob | undefined;
          if (f.file_data.startsWith('data:')) blob = parseDataUrl(f.file_data);
          else {
            const data = cleanBase64(f.file_data);
            const ext = /\.([a-z0-9]+)$/i.exec(f.filename ?? '')?.[1]?.toLowerCase();
            if (data) blob = { mimeType: (ext && FILE_MIME[ext]) || 'application/pdf', data };
          }
          if (!blob) throw invalid(param, 'must be a base64 data URL or base64 text');
          parts.push({ inlineData: blob });
        } else if (f.file_id !== undefined) {
          throw invalid(`${at}.file.file_id`, 'file ids are not supported by Gemini endpoints; send the file as file_data');
        } else {
          throw invalid(`${at}.file`, 'needs file_data');
        }
        break;
      }
      case 'refusal':
        if (p.refusal !== '') parts.push({ text: p.refusal });
        break;
    }
  });
  return parts;
}

function assistantParts(m: Extract<ChatMessage, { role: 'assistant' }>, i: number, opts: ContentsOptions, warnings: string[]): GeminiPart[] {
  const parts = textParts(m.content);
  const calls = m.tool_calls ?? [];
  const { byId, loose } = signaturesOf(m.reasoning_details, new Set(calls.map((c) => c.id)));
  const callParts: GeminiPart[] = calls.map((tc, j) => {
    const param = `messages[${i}].tool_calls[${j}].function.arguments`;
    const text = tc.function.arguments.trim();
    let args: unknown = {};
    if (text !== '') {
      try {
        args = JSON.parse(text);
      } catch {
        throw invalid(param, 'is not valid JSON');
      }
    }
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw invalid(param, 'must be a JSON object');
    const part: GeminiPart = { functionCall: { name: tc.function.name, args: args as Record<string, unknown> } };
    const sig = byId.get(tc.id);
    if (sig !== undefined) part.thoughtSignature = sig;
    return part;
  });
  // A signature without a tool call id rode on text: it goes back on the turn's last text part.
  const lastText = parts.at(-1);
  if (loose.length > 0 && lastText) lastText.thoughtSignature = loose.at(-1)!;
  if (opts.signatureSentinel && callParts.length > 0 && !callParts.some((p) => p.thoughtSignature !== undefined)) {
    callParts[0]!.thoughtSignature = SKIP_SIGNATURE_SENTINEL;
    warnings.push(`messages[${i}]: no Gemini thought signature for its tool calls (reasoning_details not echoed); sent ${SKIP_SIGNATURE_SENTINEL}`);
  }
  return [...parts, ...callParts];
}

/**
 * Convert OpenAI chat messages into Gemini `systemInstruction` and `contents`:
 *
 * - system and developer messages, wherever they are, → `systemInstruction.parts`, in order;
 * - user → role `user`: text, images (`data:` URLs inline; http(s) URLs downloaded by
 *   `opts.fetchImage`, in parallel), `input_audio` (wav → audio/wav, mp3 → audio/mp3),
 *   `file` (`file_data` as a data URL, or raw base64 typed by the filename's extension,
 *   default application/pdf) → `inlineData`; `file_id` is refused;
 * - assistant → role `model`: its text, then one `functionCall {name, args}` per tool call
 *   (arguments `""` → `{}`; invalid JSON or a non-object → 400 naming
 *   `messages[i].tool_calls[j].function.arguments`). Thought signatures from the message's
 *   `reasoning_details` (`reasoning.encrypted`, format `google-gemini-v1`) go back on the
 *   function call whose tool call id they carry, or on the last text part when they carry
 *   none. The message's `reasoning` text is not sent;
 * - tool → a `functionResponse {name, response}` in a `user` turn, `name` looked up from the
 *   assistant tool call with that `tool_call_id` (unknown id → 400 naming
 *   `messages[i].tool_call_id`), `response` per {@link wrapToolResult};
 * - empty text is left out, and so is a message left with no parts;
 * - consecutive turns of the same role are merged into one content, except that function
 *   responses are never merged with human text (a user message after tool results stays its
 *   own content: Gemini 3 otherwise reads the text as part of the tool output).
 * @see https://ai.google.dev/api/caching#Content
 * @see https://ai.google.dev/gemini-api/docs/function-calling
 */
export async function convertToGeminiContents(messages: ChatMessage[], opts: ContentsOptions): Promise<ContentsResult> {
  const warnings: string[] = [];
  const system: GeminiPart[] = [];
  const turns: Turn[] = [];
  const jobs: ImageJob[] = [];
  const toolNames = new Map<string, string>();
  for (const m of messages) if (m.role === 'assistant') for (const tc of m.tool_calls ?? []) toolNames.set(tc.id, tc.function.name);

  messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        system.push(...textParts(m.content));
        break;
      case 'user':
        turns.push({ role: 'user', kind: 'message', parts: userParts(m.content, i, jobs) });
        break;
      case 'assistant':
        turns.push({ role: 'model', kind: 'message', parts: assistantParts(m, i, opts, warnings) });
        break;
      case 'tool': {
        const name = toolNames.get(m.tool_call_id);
        if (name === undefined) throw invalid(`messages[${i}].tool_call_id`, `no assistant tool call has the id ${JSON.stringify(m.tool_call_id)}`);
        turns.push({ role: 'user', kind: 'function-response', parts: [{ functionResponse: { name, response: wrapToolResult(textsOf(m.content).join('')) } }] });
        break;
      }
    }
  });

  const results = await Promise.allSettled(jobs.map((job) => opts.fetchImage(job.url, job.param)));
  results.forEach((r, k) => {
    if (r.status === 'rejected') throw r.reason;
    jobs[k]!.part.inlineData = r.value;
  });

  const contents: GeminiContent[] = [];
  let previous: Turn | undefined;
  for (const turn of turns) {
    if (turn.parts.length === 0) continue;
    if (previous && previous.role === turn.role && previous.kind === turn.kind) {
      contents.at(-1)!.parts!.push(...turn.parts);
    } else {
      contents.push({ role: turn.role, parts: [...turn.parts] });
      previous = turn;
    }
  }
  const result: ContentsResult = { contents, warnings };
  if (system.length > 0) result.systemInstruction = { parts: system };
  return result;
}
