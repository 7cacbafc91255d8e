/**
 * The stream of a Responses request served by the `mcp` tool loop (mcp-tool.ts): the model's
 * turns run complete, so each item is written whole once known — `mcp_list_tools` items with
 * `response.mcp_list_tools.in_progress` / `.completed`, `mcp_call` items with
 * `response.mcp_call_arguments.delta` / `.done` and `response.mcp_call.in_progress` before the
 * call runs and `response.mcp_call.completed` / `.failed` after, the model's messages, reasoning
 * and function calls with their usual events — each between `response.output_item.added` and
 * `.done`; `response.created` / `response.in_progress` first, `response.completed` /
 * `.incomplete` / `.failed` last. `sequence_number` counts from 0 over the whole stream.
 * @see https://platform.openai.com/docs/api-reference/responses-streaming
 */
export class McpLoopEvents {
  private seq = 0;

  private ev(type: string, fields: Record<string, unknown>): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: this.seq++ })}\n\n`;
  }

  /** `response.created` and `response.in_progress` with the response so far. */
  started(response: Record<string, unknown>): string {
    return this.ev('response.created', { response }) + this.ev('response.in_progress', { response });
  }

  /** An `mcp_list_tools` item, whole. */
  listTools(index: number, item: Record<string, unknown>): string {
    const base = { item_id: item.id, output_index: index };
    return this.ev('response.output_item.added', { output_index: index, item: { ...item, tools: [] } })
      + this.ev('response.mcp_list_tools.in_progress', base)
      + this.ev('response.mcp_list_tools.completed', base)
      + this.ev('response.output_item.done', { output_index: index, item });
  }

  /** An `mcp_call` item about to run (`status: "in_progress"`): added, its arguments, `mcp_call.in_progress`. */
  callStarted(index: number, item: Record<string, unknown>): string {
    const base = { item_id: item.id, output_index: index };
    const args = String(item.arguments);
    return this.ev('response.output_item.added', { output_index: index, item: { ...item, arguments: '' } })
      + this.ev('response.mcp_call_arguments.delta', { ...base, delta: args })
      + this.ev('response.mcp_call_arguments.done', { ...base, arguments: args })
      + this.ev('response.mcp_call.in_progress', base);
  }

  /** An `mcp_call` item that ran: `mcp_call.completed` or `.failed`, then the item done. */
  callEnded(index: number, item: Record<string, unknown>): string {
    const base = { item_id: item.id, output_index: index };
    return this.ev(item.status === 'completed' ? 'response.mcp_call.completed' : 'response.mcp_call.failed', base) + this.ev('response.output_item.done', { output_index: index, item });
  }

  /** A model output item, whole: a message (its parts' events), reasoning, or a function call. */
  item(index: number, item: Record<string, unknown>): string {
    const id = item.id;
    const base = { item_id: id, output_index: index };
    if (item.type === 'message') {
      const parts = (Array.isArray(item.content) ? item.content : []) as Record<string, unknown>[];
      let text = this.ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', content: [] } });
      parts.forEach((part, content_index) => {
        const at = { ...base, content_index };
        if (part.type === 'refusal') {
          text += this.ev('response.content_part.added', { ...at, part: { type: 'refusal', refusal: '' } });
          text += this.ev('response.refusal.delta', { ...at, delta: part.refusal }) + this.ev('response.refusal.done', { ...at, refusal: part.refusal });
        } else {
          text += this.ev('response.content_part.added', { ...at, part: { ...part, text: '' } });
          text += this.ev('response.output_text.delta', { ...at, delta: part.text, logprobs: [] }) + this.ev('response.output_text.done', { ...at, text: part.text, logprobs: [] });
        }
        text += this.ev('response.content_part.done', { ...at, part });
      });
      return text + this.ev('response.output_item.done', { output_index: index, item });
    }
    if (item.type === 'function_call') {
      return this.ev('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' } })
        + this.ev('response.function_call_arguments.delta', { ...base, delta: item.arguments })
        + this.ev('response.function_call_arguments.done', { ...base, name: item.name, arguments: item.arguments })
        + this.ev('response.output_item.done', { output_index: index, item });
    }
    return this.ev('response.output_item.added', { output_index: index, item }) + this.ev('response.output_item.done', { output_index: index, item });
  }

  /** The last event: `response.completed` or `response.incomplete` by the response's status. */
  finished(response: Record<string, unknown>): string {
    return this.ev(response.status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  /** A failure: the `error` event (OpenAI's fields and the Open Responses `error` object), then `response.failed`. */
  failed(response: Record<string, unknown>, error: { code: string | null; message: string; param: string | null; type: string }): string {
    return this.ev('error', { code: error.code, message: error.message, param: error.param, error }) + this.ev('response.failed', { response });
  }
}
