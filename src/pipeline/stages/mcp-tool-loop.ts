import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { GatewayError, toGatewayError } from '../../errors/gateway-error.js';
import { McpLoopEvents } from '../../ingress/openai/responses/mcp-tool-events.js';
import {
  functionToolFor, listToolsItem, mcpCallItem, mcpToolsOf, requestAllows, resultText, turnBody,
  type ListedTool, type McpCallError, type McpToolRequest,
} from '../../ingress/openai/responses/mcp-tool.js';
import type { GenerationIngress } from '../../ingress/types.js';
import { connectInProcess } from '../../mcp/in-process-client.js';
import { mcpKeyView } from '../../mcp/key-view.js';
import { TOOL_CALL_ID_META } from '../../mcp/mcp-gateway.js';
import type { ApiKey } from '../../store/keys.js';
import { newGenerationId } from '../../util/ids.js';
import type { ClientSink } from '../state/client-sink.js';
import { GenerationDraft } from '../state/generation-draft.js';
import type { GatewayRuntime } from '../state/runtime.js';
import { refuseWith } from './client-response.js';
import { finishGeneration } from './finish.js';
import { serveGeneration } from './serve-generation.js';
import { CapturedAnswer } from '../state/captured-answer.js';

type Json = Record<string, unknown>;

/** A tool the model is offered: the server and the tool's own name. */
interface OfferedTool {
  serverLabel: string;
  name: string;
}

/** The loop's state: the output items so far (in order), the turn items the next turn reads, usage summed over the turns. */
interface LoopState {
  output: Json[];
  turnItems: unknown[];
  usage: Json | null;
  stream: McpLoopEvents | undefined;
}

/**
 * A Responses request naming configured MCP servers as tools (`{"type": "mcp", "server_label":
 * <mcp_servers id>, "require_approval": "never", "allowed_tools": …}`), served by the gateway
 * for any model (issue 22 item 5): the servers' tools (the key's view, in-process through the
 * MCP gateway: views, records and limits of `tools/call` apply) are listed into the model's
 * tools as function tools `<server>__<tool>`; each model turn goes through the whole pipeline
 * ({@link serveGeneration}: one generation record per turn, all under this request's id); a
 * turn that calls those functions has them run (in order) and their results appended, and the
 * model is asked again — at most `mcp_tool_loop.max_rounds` turns, the last one (or the first
 * past `max_time_ms`) with `tool_choice: "none"`. The answer is the last turn's Response (its
 * id, stored under its id when `store`) with the `mcp_list_tools` and `mcp_call` items, the
 * turns' other items, the request's own tools and the summed usage; streamed as
 * mcp-tool-events.ts writes it. A turn calling a function of the client's own returns at once.
 * A turn that fails ends the request with that turn's error.
 * @see https://platform.openai.com/docs/guides/tools-remote-mcp
 */
export async function serveMcpToolLoop(rt: GatewayRuntime, ingress: GenerationIngress, body: Json, key: ApiKey, requestId: string, sink: ClientSink, headers?: Readonly<Record<string, string>>): Promise<void> {
  const started = Date.now();
  const bounds = rt.config.mcp_tool_loop;
  let gone = false;
  const onClose = () => {
    if (!sink.finished) gone = true;
  };
  sink.onClose(onClose);
  let client: Client | undefined;
  const state: LoopState = { output: [], turnItems: [], usage: null, stream: undefined };
  try {
    const requested = mcpToolsOf(body.tools as unknown[], rt.mcp.serverIds());
    // The calls' records keep text as the request's turns do: its own op.retention, else the key's.
    const asked = (body.op as { retention?: unknown } | undefined)?.retention;
    const retention = asked === 'none' || (typeof asked === 'number' && Number.isInteger(asked) && asked >= 0) ? asked : undefined;
    client = await connectInProcess(rt.mcp, { key: mcpKeyView(key, rt.config.retention, { capTools: false, ...(retention === undefined ? {} : { retention }) }), requestId });
    const { functions, offered } = await listTools(client, requested, requestId, state);
    if (body.stream === true) {
      state.stream = new McpLoopEvents();
      sink.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no', 'x-request-id': requestId });
      await sink.write(state.stream.started(snapshot(body, requestId, state, 'in_progress')));
      for (let i = 0; i < state.output.length; i++) await sink.write(state.stream.listTools(i, state.output[i]!));
    }
    for (let round = 1; !gone; round++) {
      const answerNow = round >= bounds.max_rounds || Date.now() - started >= bounds.max_time_ms;
      const turn = new CapturedAnswer('a tool-loop turn');
      await serveGeneration(rt, ingress, turnBody(body, functions, state.turnItems, answerNow), key, requestId, turn, headers);
      if (turn.status !== 200) return await failTurn(sink, body, requestId, state, turn);
      const response = turn.body as Json;
      addUsage(state, response.usage as Json | null);
      const items = (response.output ?? []) as Json[];
      const calls = items.filter((i) => i.type === 'function_call' && offered.has(String(i.name)));
      const clientCalls = items.some((i) => i.type === 'function_call' && !offered.has(String(i.name)));
      if (calls.length === 0 || clientCalls || answerNow) return await finish(sink, body, response, turn.headers, items, offered, state);
      for (const item of items) {
        if (item.type !== 'function_call') {
          await emitItem(sink, state, item);
          state.turnItems.push(item);
          continue;
        }
        const output = await runCall(client, item, offered.get(String(item.name))!, sink, state, started + bounds.max_time_ms);
        state.turnItems.push({ type: 'function_call', call_id: item.call_id, name: item.name, arguments: item.arguments }, { type: 'function_call_output', call_id: item.call_id, output });
      }
    }
    if (!sink.headersSent) sink.abandon();
  } catch (thrown) {
    const err = thrown instanceof GatewayError ? thrown : toGatewayError(thrown);
    if (state.stream) {
      const e = err.toBody(requestId);
      const failed = snapshot(body, requestId, state, 'failed');
      failed.error = { code: 'server_error', message: `${e.code}: ${e.message}` };
      sink.end(state.stream.failed(failed, { code: e.code, message: e.message, param: e.param ?? null, type: e.type }));
    } else {
      refuseRecorded(rt, ingress, body, key, requestId, sink, err);
    }
  } finally {
    sink.offClose(onClose);
    await client?.close().catch(() => {});
  }
}

/** List the requested servers' tools; puts their `mcp_list_tools` items on the output. */
async function listTools(client: Client, requested: readonly McpToolRequest[], requestId: string, state: LoopState): Promise<{ functions: Json[]; offered: Map<string, OfferedTool> }> {
  const all = (await client.listTools()).tools as ListedTool[];
  const functions: Json[] = [];
  const offered = new Map<string, OfferedTool>();
  for (const req of requested) {
    const prefix = `${req.serverLabel}__`;
    const tools = all.filter((t) => t.name.startsWith(prefix)).map((t) => ({ ...t, name: t.name.slice(prefix.length) })).filter((t) => requestAllows(req, t));
    if (tools.length === 0) {
      throw new GatewayError('invalid_request', `tools[${req.index}].server_label: MCP server "${req.serverLabel}" offers no tool to this request (the key's allowed_tools, the server's lists and the request's allowed_tools leave none, or the server is unreachable)`, { param: `tools[${req.index}].server_label` });
    }
    state.output.push(listToolsItem(`mcpl_${requestId.replace(/^req_/, '')}_${state.output.length}`, req.serverLabel, tools));
    for (const t of tools) {
      const fn = functionToolFor(req.serverLabel, t, req.description);
      functions.push(fn);
      offered.set(String(fn.name), { serverLabel: req.serverLabel, name: t.name });
    }
  }
  return { functions, offered };
}

/** Run one call the model made through the MCP gateway; puts its `mcp_call` item on the output and returns the text the model reads. */
async function runCall(client: Client, call: Json, tool: OfferedTool, sink: ClientSink, state: LoopState, deadline: number): Promise<string> {
  const id = `mcp_${String(call.call_id).replace(/[^A-Za-z0-9_-]/g, '').slice(0, 60)}`;
  const args = String(call.arguments ?? '');
  const index = state.output.length;
  const at = { serverLabel: tool.serverLabel, name: tool.name, arguments: args };
  state.output.push(mcpCallItem(id, at, { status: 'in_progress', output: null, error: null }));
  if (state.stream) await sink.write(state.stream.callStarted(index, state.output[index]!));
  let outcome: { status: 'completed' | 'failed'; output: string | null; error: McpCallError | null };
  let forModel: string;
  try {
    let parsed: unknown = {};
    if (args.trim() !== '') parsed = JSON.parse(args);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new McpError(-32602, 'the arguments are not a JSON object');
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new McpError(-32001, 'not run: the tool loop ran out of mcp_tool_loop.max_time_ms');
    const result = (await client.callTool({ name: `${tool.serverLabel}__${tool.name}`, arguments: parsed as Record<string, unknown>, _meta: { [TOOL_CALL_ID_META]: String(call.call_id) } }, undefined, { timeout: remaining })) as CallToolResult;
    const text = resultText(result);
    forModel = text;
    outcome = result.isError === true ? { status: 'failed', output: null, error: { type: 'mcp_tool_execution_error', content: result.content } } : { status: 'completed', output: text, error: null };
  } catch (err) {
    const e = err instanceof McpError ? err : new McpError(-32603, err instanceof Error ? err.message : String(err));
    forModel = `error: ${e.message}`;
    outcome = { status: 'failed', output: null, error: { type: 'mcp_protocol_error', code: e.code, message: e.message } };
  }
  state.output[index] = mcpCallItem(id, at, outcome);
  if (state.stream) await sink.write(state.stream.callEnded(index, state.output[index]!));
  return forModel;
}

/** Put a model output item on the output (and the stream). */
async function emitItem(sink: ClientSink, state: LoopState, item: Json): Promise<void> {
  state.output.push(item);
  if (state.stream) await sink.write(state.stream.item(state.output.length - 1, item));
}

/** Answer with the last turn: its items (calls of offered tools past the bounds as `mcp_call` items not run), the loop's items before them. */
async function finish(sink: ClientSink, body: Json, response: Json, headers: Record<string, string>, items: Json[], offered: ReadonlyMap<string, OfferedTool>, state: LoopState): Promise<void> {
  let unrun = false;
  for (const item of items) {
    const tool = item.type === 'function_call' ? offered.get(String(item.name)) : undefined;
    if (!tool) {
      await emitItem(sink, state, item);
      continue;
    }
    unrun = true;
    const mcp = mcpCallItem(`mcp_${String(item.call_id).replace(/[^A-Za-z0-9_-]/g, '').slice(0, 60)}`, { serverLabel: tool.serverLabel, name: tool.name, arguments: String(item.arguments ?? '') }, {
      status: 'incomplete', output: null, error: { type: 'mcp_protocol_error', code: -32000, message: 'not run: the tool loop reached its bounds (mcp_tool_loop.max_rounds or max_time_ms)' },
    });
    await emitItem(sink, state, mcp);
  }
  const final: Json = { ...response, output: state.output, output_text: outputText(state.output), tools: body.tools, usage: state.usage ?? response.usage ?? null };
  if (body.tool_choice === undefined) final.tool_choice = 'auto';
  if (unrun) Object.assign(final, { status: 'incomplete', completed_at: null });
  if (state.stream) {
    sink.end(state.stream.finished(final));
    return;
  }
  sink.send(200, headers, final);
}

/** A turn failed: its error answer (non-streamed), or `error` + `response.failed` on the stream. */
async function failTurn(sink: ClientSink, body: Json, requestId: string, state: LoopState, turn: CapturedAnswer): Promise<void> {
  const error = ((turn.body as { error?: Json } | undefined)?.error ?? {}) as Json;
  if (!state.stream) return sink.send(turn.status, turn.headers, turn.body);
  const failed = snapshot(body, requestId, state, 'failed');
  failed.error = { code: 'server_error', message: `${String(error.code ?? 'error')}: ${String(error.message ?? 'a model turn failed')}` };
  sink.end(state.stream.failed(failed, { code: (error.code as string | null) ?? null, message: String(error.message ?? 'a model turn failed'), param: (error.param as string | null) ?? null, type: String(error.type ?? 'server_error') }));
}

/** The response while the loop runs (or after it failed): this request's items so far. */
function snapshot(body: Json, requestId: string, state: LoopState, status: 'in_progress' | 'failed'): Json {
  return {
    id: `resp_${requestId.replace(/^req_/, '')}`, object: 'response', created_at: Math.floor(Date.now() / 1000), status, completed_at: null, error: null, incomplete_details: null,
    model: typeof body.model === 'string' ? body.model : '', output: state.output, output_text: outputText(state.output), usage: status === 'failed' ? state.usage : null,
    instructions: body.instructions ?? null, max_output_tokens: body.max_output_tokens ?? null, parallel_tool_calls: body.parallel_tool_calls ?? true, previous_response_id: body.previous_response_id ?? null,
    reasoning: null, store: body.store === true, temperature: body.temperature ?? 1, top_p: body.top_p ?? 1, text: { format: { type: 'text' } }, tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [], truncation: 'disabled', background: false, metadata: body.metadata ?? {},
  };
}

function outputText(output: readonly Json[]): string {
  let text = '';
  for (const item of output) {
    if (item.type !== 'message' || !Array.isArray(item.content)) continue;
    for (const p of item.content as { type: string; text?: string }[]) if (p.type === 'output_text') text += p.text ?? '';
  }
  return text;
}

/** Add a turn's usage (Responses shape, `cost` included) to the loop's. */
function addUsage(state: LoopState, usage: Json | null | undefined): void {
  if (!usage) return;
  const sum = (a: unknown, b: unknown): unknown => {
    if (typeof a === 'number' && typeof b === 'number') return a + b;
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const out: Json = { ...(a as Json) };
      for (const [k, v] of Object.entries(b as Json)) out[k] = k in out ? sum(out[k], v) : v;
      return out;
    }
    return b ?? a;
  };
  state.usage = state.usage === null ? { ...usage } : (sum(state.usage, usage) as Json);
}

/** Refuse the request before any turn (a bad `mcp` tool, no tools, the gateway closing): one record, the error envelope. */
function refuseRecorded(rt: GatewayRuntime, ingress: GenerationIngress, body: Json, key: ApiKey, requestId: string, sink: ClientSink, err: GatewayError): void {
  if (sink.headersSent) return;
  const draft = new GenerationDraft(newGenerationId(), requestId, key.isAdmin ? null : key.id, ingress.api, body.stream === true, typeof body.model === 'string' ? body.model.slice(0, 200) : '');
  draft.retention = key.settings.retention ?? rt.config.retention;
  refuseWith(sink, ingress, draft, err);
  void finishGeneration(rt, draft);
}
