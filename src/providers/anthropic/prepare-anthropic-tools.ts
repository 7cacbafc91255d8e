import type { FunctionTool, ResponseFormat, ToolChoice } from '../../core/chat-types.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { ANY_JSON_OBJECT_SCHEMA, JSON_RESPONSE_TOOL_NAME } from './anthropic-json-response-tool.js';
import type { AnthropicRequestBody, AnthropicTool, AnthropicToolChoice } from './anthropic-wire-types.js';

/** The tool-related inputs of a request, after unsupported parameters were dropped. */
export interface ToolsInput {
  tools?: FunctionTool[] | undefined;
  toolChoice?: ToolChoice | undefined;
  parallelToolCalls?: boolean | null | undefined;
  responseFormat?: ResponseFormat | undefined;
  /** The endpoint lists `structured_outputs`: JSON schemas go to `output_config.format`, `strict` is sent. */
  nativeStructuredOutputs: boolean;
  /** Extended thinking is on: Anthropic then refuses a forced tool choice. */
  thinking: boolean;
  /** The history holds tool_use / tool_result blocks. */
  hasToolBlocks: boolean;
}

/** What goes into the request body, and the adjustments made. */
export type PreparedTools = Pick<AnthropicRequestBody, 'tools' | 'tool_choice' | 'output_config'> & { warnings: string[] };

/** Declared when the history has tool blocks but the request has no tools (Anthropic requires `tools` then); never callable: tool_choice is `none`. */
const PLACEHOLDER_TOOL: AnthropicTool = {
  name: 'no_tools_available',
  description: 'Placeholder: tools were used earlier in this conversation, none is available now. Do not call it.',
  input_schema: { type: 'object', properties: {} },
};

function toAnthropicTool(t: FunctionTool, i: number, strictAllowed: boolean): AnthropicTool {
  const { name, description, parameters, strict } = t.function;
  if (name === JSON_RESPONSE_TOOL_NAME) {
    const param = `tools[${i}].function.name`;
    throw new GatewayError('invalid_request', `${param}: "${JSON_RESPONSE_TOOL_NAME}" is reserved by the gateway on Anthropic endpoints; rename the tool`, { param });
  }
  const schema = parameters ?? { type: 'object', properties: {} };
  const tool: AnthropicTool = { name, input_schema: schema.type === undefined ? { type: 'object', ...schema } : schema };
  if (description !== undefined) tool.description = description;
  if (strict === true && strictAllowed) tool.strict = true;
  return tool;
}

/** The JSON-response tool for a `response_format` that is not served natively, or undefined. */
function jsonResponseTool(format: ResponseFormat | undefined, native: boolean): AnthropicTool | undefined {
  if (!format) return undefined;
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { name: JSON_RESPONSE_TOOL_NAME, description: 'Respond with a JSON object.', input_schema: { ...ANY_JSON_OBJECT_SCHEMA } };
    case 'json_schema': {
      const { schema, description, name } = format.json_schema;
      if (native && schema) return undefined;
      return {
        name: JSON_RESPONSE_TOOL_NAME,
        description: description ?? `Respond with a JSON object matching the "${name}" schema.`,
        input_schema: schema ?? { ...ANY_JSON_OBJECT_SCHEMA },
      };
    }
  }
}

function mapToolChoice(choice: ToolChoice): AnthropicToolChoice {
  if (typeof choice === 'object') return { type: 'tool', name: choice.function.name };
  switch (choice) {
    case 'auto':
      return { type: 'auto' };
    case 'required':
      return { type: 'any' };
    case 'none':
      return { type: 'none' };
  }
}

/**
 * Tools, tool choice and response format → `tools`, `tool_choice`, `output_config`:
 * - function tools → `{name, description, input_schema: parameters ?? {type:"object"}}`;
 * - `auto` → auto, `required` → any, `none` → none (tools kept), named → `{type:"tool", name}`;
 *   `parallel_tool_calls: false` → `disable_parallel_tool_use: true` (on `auto` when no choice);
 * - `response_format` json_schema → `output_config.format` on endpoints with
 *   `structured_outputs`; otherwise (and for json_object) the forced {@link JSON_RESPONSE_TOOL_NAME}
 *   tool — `any` instead when the client has tools of its own, its named choice kept;
 * - with thinking a forced choice (any / tool) becomes `auto` (Anthropic refuses it), with a warning;
 * - tool blocks in the history without tools → a placeholder tool and `tool_choice: none`.
 * @throws GatewayError `invalid_request` for a client tool using the reserved name.
 * @see https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use
 * @see https://docs.claude.com/en/docs/build-with-claude/structured-outputs
 */
export function prepareAnthropicTools(input: ToolsInput): PreparedTools {
  const warnings: string[] = [];
  const clientTools = (input.tools ?? []).map((t, i) => toAnthropicTool(t, i, input.nativeStructuredOutputs));
  const out: PreparedTools = { warnings };
  const format = input.responseFormat;
  if (format?.type === 'json_schema' && input.nativeStructuredOutputs && format.json_schema.schema) {
    out.output_config = { format: { type: 'json_schema', schema: format.json_schema.schema } };
  }
  const jsonTool = jsonResponseTool(format, input.nativeStructuredOutputs);
  const tools = jsonTool ? [...clientTools, jsonTool] : clientTools;
  let choice: AnthropicToolChoice | undefined;
  if (jsonTool) {
    const own = input.toolChoice;
    if (clientTools.length === 0 || own === 'none') choice = { type: 'tool', name: JSON_RESPONSE_TOOL_NAME };
    else if (typeof own === 'object') choice = mapToolChoice(own);
    else choice = { type: 'any' };
  } else if (input.toolChoice !== undefined && tools.length > 0) {
    choice = mapToolChoice(input.toolChoice);
  }
  if (input.parallelToolCalls === false && tools.length > 0 && choice?.type !== 'none') {
    choice = { ...(choice ?? { type: 'auto' }), disable_parallel_tool_use: true } as AnthropicToolChoice;
  }
  if (input.thinking && (choice?.type === 'any' || choice?.type === 'tool')) {
    warnings.push(`tool_choice "${choice.type}" changed to "auto": Anthropic does not allow forcing tool use with extended thinking`);
    const { disable_parallel_tool_use: dp } = choice;
    choice = dp === undefined ? { type: 'auto' } : { type: 'auto', disable_parallel_tool_use: dp };
  }
  if (tools.length === 0 && input.hasToolBlocks) {
    warnings.push('the conversation has tool calls but the request declares no tools: a placeholder tool was declared with tool_choice "none"');
    out.tools = [PLACEHOLDER_TOOL];
    out.tool_choice = { type: 'none' };
    return out;
  }
  if (tools.length > 0) out.tools = tools;
  if (choice) out.tool_choice = choice;
  return out;
}
