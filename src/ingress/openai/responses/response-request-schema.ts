import { z } from 'zod';
import { GatewayError } from '../../../errors/gateway-error.js';
import { compileFastParser, INVALID, type FastParser } from '../../../util/compile-zod-parser.js';
import { gatewayFields } from '../../gateway-fields.js';
import { firstIssueError, requireObject } from '../../validate.js';
import { nullable, tokens } from '../openai-request-fields.js';

/**
 * The Responses API request (`POST /v1/responses`): the fields the gateway serves, validated;
 * unknown fields are kept on the parsed request (a native `/responses` endpoint gets them) but
 * never reach a translated call.
 * @see https://platform.openai.com/docs/api-reference/responses/create
 */

const inputText = z.object({ type: z.literal('input_text'), text: z.string() }).passthrough();
const inputImage = z
  .object({
    type: z.literal('input_image'),
    image_url: nullable(z.string()),
    file_id: nullable(z.string()),
    detail: nullable(z.enum(['auto', 'low', 'high', 'original'])),
  })
  .passthrough();
const inputFile = z
  .object({ type: z.literal('input_file'), file_data: z.string().optional(), filename: z.string().optional(), file_id: nullable(z.string()), file_url: z.string().optional() })
  .passthrough();
const outputText = z.object({ type: z.literal('output_text'), text: z.string() }).passthrough();
const refusal = z.object({ type: z.literal('refusal'), refusal: z.string() }).passthrough();

/** A content part of an input message. */
const contentPart = z.discriminatedUnion('type', [inputText, inputImage, inputFile, outputText, refusal]);

const message = z
  .object({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(contentPart)]),
    id: z.string().optional(),
    status: z.string().optional(),
  })
  .passthrough();

const functionCall = z
  .object({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string().min(1), arguments: z.string(), id: z.string().optional(), status: z.string().optional() })
  .passthrough();

const functionCallOutput = z
  .object({
    type: z.literal('function_call_output'),
    call_id: z.string().min(1),
    output: z.union([z.string(), z.array(z.discriminatedUnion('type', [inputText, inputImage, inputFile]))]),
    id: nullable(z.string()),
    status: nullable(z.string()),
  })
  .passthrough();

const reasoning = z
  .object({
    type: z.literal('reasoning'),
    id: z.string().optional(),
    summary: z.array(z.object({ type: z.literal('summary_text'), text: z.string() }).passthrough()).default([]),
    content: z.array(z.object({ type: z.literal('reasoning_text'), text: z.string() }).passthrough()).optional(),
    encrypted_content: nullable(z.string()),
    status: z.string().optional(),
  })
  .passthrough();

/** A reference to an output item of a stored response (resolved before conversion). */
const itemReference = z.object({ type: z.literal('item_reference'), id: z.string().min(1) }).passthrough();

/** The input item types the gateway serves. */
const SUPPORTED_ITEM_TYPES = new Set(['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference']);

export const inputItem = z.union([message, functionCall, functionCallOutput, reasoning, itemReference]);
export type InputItem = z.infer<typeof inputItem>;

/**
 * The schema of each served item type: an item is checked against its own type's schema, so a
 * bad item's error names its field (`input[1].role`) rather than the union branch zod found
 * deepest (a message's `content[0].type` measured against `reasoning`).
 */
const ITEM_SCHEMAS: Record<string, z.ZodTypeAny> = { message, function_call: functionCall, function_call_output: functionCallOutput, reasoning, item_reference: itemReference };

const functionTool = z
  .object({
    type: z.literal('function'),
    name: z.string().min(1).max(128),
    description: nullable(z.string()),
    parameters: nullable(z.record(z.unknown())),
    strict: nullable(z.boolean()),
  })
  .passthrough();
export type ResponsesFunctionTool = z.infer<typeof functionTool>;

const namespaceTool = z.object({ type: z.literal('namespace'), name: z.string().min(1).max(128), tools: z.array(functionTool) }).passthrough();

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), name: z.string().min(1) }).passthrough(),
]);

const textFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }).passthrough(),
  z.object({ type: z.literal('json_object') }).passthrough(),
  z
    .object({
      type: z.literal('json_schema'),
      name: z.string().min(1).max(64),
      schema: z.record(z.unknown()),
      description: z.string().optional(),
      strict: nullable(z.boolean()),
    })
    .passthrough(),
]);

const responsesFields = {
  model: z.string({ required_error: 'is required' }).min(1, 'is required'),
    input: z.union([z.string(), z.array(z.unknown())], { required_error: 'is required', invalid_type_error: 'must be a string or an array of input items' }),
    instructions: nullable(z.string()),
    tools: z.array(z.unknown()).optional(),
    tool_choice: toolChoice.optional(),
    text: z.object({ format: textFormat.optional(), verbosity: nullable(z.enum(['low', 'medium', 'high'])) }).passthrough().optional(),
    reasoning: nullable(
      z
        .object({
          effort: nullable(z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])),
          summary: nullable(z.enum(['auto', 'concise', 'detailed'])),
          generate_summary: nullable(z.enum(['auto', 'concise', 'detailed'])),
        })
        .passthrough(),
    ),
    max_output_tokens: tokens,
    temperature: nullable(z.number().min(0).max(2)),
    top_p: nullable(z.number().min(0).max(1)),
    metadata: nullable(z.record(z.string().max(512)).refine((m) => Object.keys(m).length <= 16, 'at most 16 keys')),
    parallel_tool_calls: nullable(z.boolean()),
    stream: nullable(z.boolean()),
    store: nullable(z.boolean()),
    previous_response_id: nullable(z.string().min(1)),
    background: nullable(z.literal(false, { errorMap: () => ({ message: 'background responses are not supported' }) })),
    conversation: z.undefined({ invalid_type_error: 'conversations are not supported; use previous_response_id' }).optional(),
    user: z.string().max(256).optional(),
    ...gatewayFields,
};

export const responsesRequestSchema = z.object(responsesFields).passthrough();

/**
 * A validated Responses request; `input` and `tools` hold only supported items. Fields the
 * gateway does not know are still on the object (for a native `/responses` endpoint).
 */
export type ResponsesRequest = Omit<z.infer<z.ZodObject<typeof responsesFields>>, 'input'> & {
  input: string | InputItem[];
};

/**
 * Validate a Responses request body. Input items of types the gateway does not serve (computer
 * use, hosted-tool calls, …) are refused by name. Tools: function tools and namespaces of
 * function tools (Codex) are validated; hosted tools (`web_search`, `file_search`, …) are kept
 * for native `/responses` endpoints and dropped, with a warning in the record, on translation.
 * @throws GatewayError `invalid_request` / `unsupported_parameter` with `param` set
 * (e.g. `input[2].type`).
 */
export function parseResponsesRequest(body: unknown): ResponsesRequest {
  const obj = requireObject(body);
  const fast = fastResponsesRequest(obj);
  return fast !== INVALID ? fast : parseWithZod(obj);
}

/**
 * An empty `input` (`""` or `[]`) with no `previous_response_id` leaves the model nothing to
 * answer: refused here, naming `input`, rather than by the upstream naming a field of its own.
 * @throws GatewayError `invalid_request` (400, `param: "input"`).
 */
function nonEmpty(req: ResponsesRequest): ResponsesRequest {
  if (req.input.length === 0 && !req.previous_response_id) {
    throw new GatewayError('invalid_request', 'input: must not be empty (send a string or at least one input item, or previous_response_id)', { param: 'input' });
  }
  return req;
}

/**
 * {@link parseResponsesRequest} with zod alone: the reference the compiled validators are tested against.
 * @throws GatewayError as {@link parseResponsesRequest}.
 */
export function parseResponsesRequestWithZod(body: unknown): ResponsesRequest {
  return parseWithZod(requireObject(body));
}

function parseWithZod(obj: Record<string, unknown>): ResponsesRequest {
  const result = responsesRequestSchema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  const req = result.data;
  let input: string | InputItem[] = typeof req.input === 'string' ? req.input : [];
  if (Array.isArray(req.input)) {
    input = req.input.map((raw, i) => {
      const type = raw && typeof raw === 'object' ? ((raw as { type?: unknown }).type ?? 'message') : undefined;
      if (typeof type !== 'string') throw new GatewayError('invalid_request', `input[${i}]: must be an input item object`, { param: `input[${i}]` });
      if (!SUPPORTED_ITEM_TYPES.has(type)) {
        throw new GatewayError('unsupported_parameter', `input[${i}].type: ${JSON.stringify(type)} items are not supported (message, function_call, function_call_output, reasoning and item_reference are)`, { param: `input[${i}].type` });
      }
      return check(ITEM_SCHEMAS[type]!, raw, ['input', i]) as InputItem;
    });
  }
  req.tools?.forEach((raw, i) => {
    const type = raw && typeof raw === 'object' ? (raw as { type?: unknown }).type : undefined;
    if (type === 'function') check(functionTool, raw, ['tools', i]);
    else if (type === 'namespace') check(namespaceTool, raw, ['tools', i]);
    else if (typeof type !== 'string') throw new GatewayError('invalid_request', `tools[${i}].type: is required`, { param: `tools[${i}].type` });
  });
  return nonEmpty({ ...req, input } as ResponsesRequest);
}

const fastRequest = compileFastParser(responsesRequestSchema);
const fastInputItem = compileFastParser(inputItem);
const fastFunctionTool = compileFastParser(functionTool);
const fastNamespaceTool = compileFastParser(namespaceTool);

/**
 * {@link parseResponsesRequest} through the compiled validators (src/util/compile-zod-parser.ts):
 * the same result for a body it accepts, {@link INVALID} for any body it would refuse (which
 * then goes through zod, so the error is zod's). Exported for the equivalence test.
 */
export function fastResponsesRequest(obj: Record<string, unknown>): ResponsesRequest | typeof INVALID {
  const req = fastRequest(obj) as z.output<typeof responsesRequestSchema> | typeof INVALID;
  if (req === INVALID) return INVALID;
  let input: string | InputItem[] = typeof req.input === 'string' ? req.input : [];
  if (req.input.length === 0 && !req.previous_response_id) return INVALID;
  if (Array.isArray(req.input)) {
    input = [];
    for (const raw of req.input) {
      const type = raw && typeof raw === 'object' ? ((raw as { type?: unknown }).type ?? 'message') : undefined;
      if (typeof type !== 'string' || !SUPPORTED_ITEM_TYPES.has(type)) return INVALID;
      const item = fastInputItem(raw);
      if (item === INVALID) return INVALID;
      input.push(item as InputItem);
    }
  }
  if (req.tools) {
    for (const raw of req.tools) {
      const type = raw && typeof raw === 'object' ? (raw as { type?: unknown }).type : undefined;
      const check: FastParser | undefined = type === 'function' ? fastFunctionTool : type === 'namespace' ? fastNamespaceTool : undefined;
      if (check ? check(raw) === INVALID : typeof type !== 'string') return INVALID;
    }
  }
  return { ...req, input } as ResponsesRequest;
}

/** Validate one element with `schema`; issues are reported under `path`. */
function check<T extends z.ZodTypeAny>(schema: T, raw: unknown, path: (string | number)[]): z.infer<T> {
  // `path` prefixes every issue, those nested in a union's branches too.
  const r = schema.safeParse(raw, { path });
  if (!r.success) throw firstIssueError(r.error.issues);
  return r.data;
}

/** A function tool the model may call, with the namespace it was declared in (Codex groups tools so). */
export interface DeclaredFunction {
  tool: ResponsesFunctionTool;
  namespace?: string;
}

/** The function tools of a request, namespaces flattened (names stay as declared). */
export function functionToolsOf(tools: readonly unknown[] | undefined): DeclaredFunction[] {
  const out: DeclaredFunction[] = [];
  for (const t of tools ?? []) {
    const tool = t as { type: string; name: string; tools?: unknown[] };
    if (tool.type === 'function') out.push({ tool: t as ResponsesFunctionTool });
    else if (tool.type === 'namespace') for (const inner of tool.tools ?? []) out.push({ tool: inner as ResponsesFunctionTool, namespace: tool.name });
  }
  return out;
}

/** The tools translation cannot carry (hosted tools), as `tools[i] (type)`. */
export function hostedToolsOf(tools: readonly unknown[] | undefined): string[] {
  return (tools ?? []).flatMap((t, i) => {
    const type = (t as { type: string }).type;
    return type === 'function' || type === 'namespace' ? [] : [`tools[${i}] (${type})`];
  });
}
