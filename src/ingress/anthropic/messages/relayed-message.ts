import { createParser } from 'eventsource-parser';

/**
 * The two forms of one Anthropic Messages answer as the pass-through lane relayed it — the
 * upstream's stream events, or its message body — each built from the other, for the response
 * cache: an answer that went to the client as a stream can answer a later non-streamed request
 * with the same body, and the other way round. Nothing is translated: every block type, field
 * and delta the upstream sent (signatures, citations, server tool blocks, `container`,
 * `context_management`, `stop_details`) is carried as it came.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/streaming
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** One server-sent event in Anthropic's framing: `event: <type>` then `data: <json>`. */
const sse = (data: Json): string => `event: ${String(data.type)}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * The message body the events of one Messages stream add up to, as Anthropic's SDKs accumulate
 * it: `message_start`'s message; each block from its `content_block_start`, with the deltas of
 * its index applied (`text_delta`, `thinking_delta`, `citations_delta` appended;
 * `signature_delta` set; `input_json_delta` gathered and parsed at `content_block_stop`; any
 * other delta's string members appended to the block's, e.g. `compaction_delta`); then
 * `message_delta`'s `delta` members, its non-null `usage` counters and its other members
 * (`context_management`). `ping`, `message_stop` and unknown events change nothing.
 * @param events the relayed stream text (SSE).
 * @throws Error when the text holds no `message_start` or an event's data is not JSON.
 */
export function messageFromEvents(events: string): Json {
  let message: Json | undefined;
  const inputs = new Map<number, string>();
  const content = (): unknown[] => (message!.content as unknown[]);
  const apply = (e: Json): void => {
    if (e.type === 'message_start' && isObject(e.message)) {
      message = structuredClone(e.message);
      if (!Array.isArray(message.content)) message.content = [];
      return;
    }
    if (!message) return;
    const index = typeof e.index === 'number' ? e.index : -1;
    switch (e.type) {
      case 'content_block_start':
        if (isObject(e.content_block)) content()[index] = structuredClone(e.content_block);
        return;
      case 'content_block_delta': {
        const block = content()[index];
        if (!isObject(block) || !isObject(e.delta)) return;
        const d = e.delta;
        if (d.type === 'input_json_delta') inputs.set(index, (inputs.get(index) ?? '') + String(d.partial_json ?? ''));
        else if (d.type === 'signature_delta') block.signature = d.signature;
        else if (d.type === 'citations_delta') block.citations = [...(Array.isArray(block.citations) ? block.citations : []), d.citation];
        else {
          for (const [k, v] of Object.entries(d)) {
            if (k === 'type') continue;
            block[k] = typeof v === 'string' && (typeof block[k] === 'string' || block[k] === null || block[k] === undefined) ? String(block[k] ?? '') + v : v;
          }
        }
        return;
      }
      case 'content_block_stop': {
        const json = inputs.get(index);
        const block = content()[index];
        if (json !== undefined && isObject(block)) block.input = json === '' ? {} : (JSON.parse(json) as unknown);
        inputs.delete(index);
        return;
      }
      case 'message_delta': {
        if (isObject(e.delta)) Object.assign(message, e.delta);
        if (isObject(e.usage)) {
          const usage: Json = isObject(message.usage) ? message.usage : (message.usage = {});
          for (const [k, v] of Object.entries(e.usage)) if (v !== null && v !== undefined) usage[k] = v;
        }
        for (const [k, v] of Object.entries(e)) if (k !== 'type' && k !== 'delta' && k !== 'usage') message[k] = v;
        return;
      }
    }
  };
  const parser = createParser({ onEvent: (ev) => apply(JSON.parse(ev.data) as Json) });
  parser.feed(events.endsWith('\n\n') ? events : `${events}\n\n`);
  if (!message) throw new Error('the relayed stream holds no message_start event');
  return message;
}

/** Members of a message body that a stream sends in `message_delta`, not `message_start`. */
const DELTA_MEMBERS = ['stop_reason', 'stop_sequence', 'stop_details', 'container'] as const;

/** A block's `content_block_start` form and the deltas that complete it. */
function blockEvents(block: unknown, index: number): Json[] {
  if (!isObject(block)) return [{ type: 'content_block_start', index, content_block: block }];
  const delta = (d: Json): Json => ({ type: 'content_block_delta', index, delta: d });
  const out: Json[] = [];
  if (block.type === 'text' && typeof block.text === 'string') {
    const citations = Array.isArray(block.citations) ? block.citations : undefined;
    out.push({ type: 'content_block_start', index, content_block: { ...block, text: '', ...(citations ? { citations: [] } : {}) } });
    for (const citation of citations ?? []) out.push(delta({ type: 'citations_delta', citation }));
    if (block.text !== '') out.push(delta({ type: 'text_delta', text: block.text }));
  } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
    out.push({ type: 'content_block_start', index, content_block: { ...block, thinking: '', signature: '' } });
    if (block.thinking !== '') out.push(delta({ type: 'thinking_delta', thinking: block.thinking }));
    if (typeof block.signature === 'string' && block.signature !== '') out.push(delta({ type: 'signature_delta', signature: block.signature }));
  } else if (block.type === 'compaction' && typeof block.content === 'string') {
    out.push({ type: 'content_block_start', index, content_block: { ...block, content: null } });
    out.push(delta({ type: 'compaction_delta', content: block.content }));
  } else if (isObject(block.input)) {
    // tool_use, server_tool_use, mcp_tool_use: the input streams as JSON text.
    out.push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
    if (Object.keys(block.input).length > 0) out.push(delta({ type: 'input_json_delta', partial_json: JSON.stringify(block.input) }));
  } else {
    // Result blocks, redacted thinking, …: whole in their start event.
    out.push({ type: 'content_block_start', index, content_block: block });
  }
  out.push({ type: 'content_block_stop', index });
  return out;
}

/**
 * The stream events of a Messages body, in the order Anthropic sends them: `message_start`
 * (the message without its content, stop reason and other `message_delta` members), per block
 * `content_block_start`, its deltas (text, citations, thinking then signature, tool input as one
 * `input_json_delta`, compaction) and `content_block_stop`, then `message_delta` (stop reason,
 * stop sequence, `stop_details`, `container`, the whole `usage`, `context_management`) and
 * `message_stop`. {@link messageFromEvents} of the result gives the body back.
 * @param body a Messages response body (`type: "message"`).
 */
export function eventsFromMessage(body: Json): string {
  const start: Json = { ...body, content: [], stop_reason: null, stop_sequence: null };
  for (const k of DELTA_MEMBERS) if (k !== 'stop_reason' && k !== 'stop_sequence') delete start[k];
  delete start.context_management;
  const usage = isObject(body.usage) ? body.usage : {};
  start.usage = { ...usage, output_tokens: 0 };
  let text = sse({ type: 'message_start', message: start });
  const blocks = Array.isArray(body.content) ? body.content : [];
  blocks.forEach((block, i) => {
    for (const e of blockEvents(block, i)) text += sse(e);
  });
  const delta: Json = {};
  for (const k of DELTA_MEMBERS) if (k in body) delta[k] = body[k];
  const end: Json = { type: 'message_delta', delta, usage };
  if ('context_management' in body) end.context_management = body.context_management;
  text += sse(end);
  return text + sse({ type: 'message_stop' });
}
