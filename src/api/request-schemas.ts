import { z, type ZodIssue } from 'zod';
import { GatewayError } from '../errors/gateway-error.js';
import { formatPath } from '../config/load.js';
import type { ChatRequest, CompletionRequest } from './chat-types.js';

/**
 * Validation of client requests (SPEC §2.1). Every bad value becomes a 400 `invalid_request`
 * whose `param` names the field in dotted form (`messages[1].content`).
 */

const nullable = <T extends z.ZodTypeAny>(t: T) => t.nullable().optional();

const cacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.string().optional() }).passthrough();

const textPart = z.object({ type: z.literal('text'), text: z.string(), cache_control: cacheControl.optional() }).passthrough();
const imagePart = z
  .object({
    type: z.literal('image_url'),
    image_url: z.object({
      url: z.string().min(1, 'must be an http(s) or data: URL'),
      detail: z.enum(['auto', 'low', 'high', 'original']).optional(),
    }),
  })
  .passthrough();
const audioPart = z
  .object({ type: z.literal('input_audio'), input_audio: z.object({ data: z.string(), format: z.string() }) })
  .passthrough();
const filePart = z
  .object({
    type: z.literal('file'),
    file: z.object({ filename: z.string().optional(), file_data: z.string().optional(), file_id: z.string().optional() }),
  })
  .passthrough();
const refusalPart = z.object({ type: z.literal('refusal'), refusal: z.string() }).passthrough();

const textOnly = z.union([z.string(), z.array(textPart)]);
const userContent = z.union([
  z.string(),
  z.array(z.discriminatedUnion('type', [textPart, imagePart, audioPart, filePart])).min(1, 'must not be empty'),
]);

const toolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: textOnly, name: z.string().optional() }),
  z.object({ role: z.literal('developer'), content: textOnly, name: z.string().optional() }),
  z.object({ role: z.literal('user'), content: userContent, name: z.string().optional() }),
  z.object({
    role: z.literal('assistant'),
    content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textPart, refusalPart])), z.null()]).optional(),
    name: z.string().optional(),
    tool_calls: z.array(toolCall).optional(),
    refusal: nullable(z.string()),
    reasoning: nullable(z.string()),
    /** DeepSeek's name for `reasoning` (llama.cpp, LiteLLM, older vLLM); read as `reasoning`. */
    reasoning_content: nullable(z.string()),
    reasoning_details: z
      .array(
        z
          .object({
            type: z.enum(['reasoning.text', 'reasoning.encrypted', 'reasoning.summary']),
            text: z.string().optional(),
            signature: z.string().optional(),
            data: z.string().optional(),
            id: z.string().optional(),
            format: z.string().optional(),
            index: z.number().int().optional(),
          })
          .passthrough(),
      )
      .optional(),
  }),
  z.object({ role: z.literal('tool'), content: textOnly, tool_call_id: z.string().min(1) }),
]);

const functionName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 characters of a-z, A-Z, 0-9, _ or -');

const tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: functionName,
    description: z.string().optional(),
    parameters: z.record(z.unknown()).optional(),
    strict: nullable(z.boolean()),
  }),
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: functionName }) }),
]);

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: functionName,
      description: z.string().optional(),
      schema: z.record(z.unknown()).optional(),
      strict: nullable(z.boolean()),
    }),
  }),
]);

const effort = z.enum(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']);

const stop = nullable(
  z.union([z.string(), z.array(z.string()).max(4, 'at most 4 stop sequences are allowed')]),
);

const slugList = z.array(z.string().min(1)).max(64);

const provider = z
  .object({
    order: slugList.optional(),
    allow_fallbacks: z.boolean().optional(),
    require_parameters: z.boolean().optional(),
    data_collection: z.enum(['allow', 'deny']).optional(),
    zdr: z.boolean().optional(),
    only: slugList.optional(),
    ignore: slugList.optional(),
    quantizations: slugList.optional(),
    sort: z.enum(['price', 'throughput', 'latency']).optional(),
    max_price: z
      .object({ prompt: z.number().min(0).optional(), completion: z.number().min(0).optional(), request: z.number().min(0).optional() })
      .strict()
      .optional(),
  })
  .strict();

const op = z
  .object({
    retention: z.union([z.literal('none'), z.number().int().min(0).max(36_500)]).optional(),
    tags: z.array(z.string().min(1).max(64)).max(16).optional(),
    session: z.string().min(1).max(128).optional(),
  })
  .strict();

const tokens = nullable(z.number().int().min(1).max(100_000_000, 'must be at most 100000000'));

const common = {
  model: z.string({ required_error: 'is required' }).min(1, 'is required'),
  stream: nullable(z.boolean()),
  stream_options: nullable(z.object({ include_usage: z.boolean().optional() }).passthrough()),
  temperature: nullable(z.number().min(0).max(2)),
  top_p: nullable(z.number().min(0).max(1)),
  n: nullable(z.number().int().min(1).max(1, 'only n = 1 is supported')),
  stop,
  presence_penalty: nullable(z.number().min(-2).max(2)),
  frequency_penalty: nullable(z.number().min(-2).max(2)),
  logit_bias: nullable(z.record(z.number().int().min(-100).max(100))),
  seed: nullable(z.number().int().refine(Number.isSafeInteger, 'must be a safe integer (|seed| ≤ 2^53 - 1)')),
  user: z.string().max(256).optional(),
  models: z.array(z.string().min(1)).max(16).optional(),
  provider: provider.optional(),
  op: op.optional(),
};

export const chatRequestSchema = z
  .object({
    ...common,
    messages: z.array(message, { required_error: 'is required' }).min(1, 'must contain at least one message'),
    max_tokens: tokens,
    max_completion_tokens: tokens,
    top_k: nullable(z.number().int().min(0)),
    min_p: nullable(z.number().min(0).max(1)),
    repetition_penalty: nullable(z.number().gt(0).max(2)),
    logprobs: nullable(z.boolean()),
    top_logprobs: nullable(z.number().int().min(0).max(20)),
    tools: z.array(tool).max(512).optional(),
    tool_choice: toolChoice.optional(),
    parallel_tool_calls: nullable(z.boolean()),
    response_format: responseFormat.optional(),
    reasoning: z
      .object({ effort: effort.optional(), max_tokens: z.number().int().min(0).optional(), exclude: z.boolean().optional(), enabled: z.boolean().optional() })
      .strict()
      .optional(),
    reasoning_effort: nullable(effort),
  })
  .passthrough()
  .superRefine((req, ctx) => {
    if (req.top_logprobs != null && req.logprobs !== true) {
      ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'requires logprobs: true' });
    }
    if (req.tool_choice && typeof req.tool_choice === 'object') {
      const name = req.tool_choice.function.name;
      if (!req.tools?.some((t) => t.function.name === name)) {
        ctx.addIssue({ code: 'custom', path: ['tool_choice', 'function', 'name'], message: `names no tool in tools: "${name}"` });
      }
    }
    if (req.tool_choice === 'required' && !req.tools?.length) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: '"required" needs a non-empty tools list' });
    }
  });

export const completionRequestSchema = z
  .object({
    ...common,
    prompt: z.union([z.string(), z.array(z.string()).min(1).max(1, 'only one prompt per request is supported')], {
      required_error: 'is required',
      invalid_type_error: 'must be a string (token-id prompts are not supported)',
    }),
    max_tokens: tokens,
    logprobs: nullable(z.number().int().min(0).max(5)),
    echo: nullable(z.boolean()),
    suffix: nullable(z.string()),
    best_of: nullable(z.number().int().min(0).max(20)),
  })
  .passthrough();

const KNOWN_CHAT_FIELDS = new Set(Object.keys(chatRequestSchema._def.schema.shape));
const KNOWN_COMPLETION_FIELDS = new Set(Object.keys(completionRequestSchema.shape));

function firstIssueError(issues: ZodIssue[]): GatewayError {
  // Prefer the deepest specific issue: zod reports union failures at the union's path.
  let issue = issues[0]!;
  if (issue.code === 'invalid_union') {
    const nested = issue.unionErrors.flatMap((e) => e.issues).sort((a, b) => b.path.length - a.path.length)[0];
    if (nested) issue = nested;
  }
  const param = issue.path.length > 0 ? formatPath(issue.path) : null;
  let message = issue.message;
  if (issue.code === 'invalid_type') {
    message = issue.received === 'undefined' ? 'is required' : `must be ${issue.expected}, got ${issue.received}`;
  } else if (issue.code === 'invalid_union_discriminator') {
    message = `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
  } else if (issue.code === 'invalid_enum_value') {
    message = `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
  }
  return new GatewayError('invalid_request', param ? `${param}: ${message}` : message, { param });
}

/** Strip fields the gateway does not know so they never reach an upstream. */
function pickKnown<T>(value: Record<string, unknown>, known: Set<string>): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (known.has(k) && v !== undefined) out[k] = v;
  return out as T;
}

function requireObject(body: unknown): Record<string, unknown> {
  if (body === undefined) throw new GatewayError('invalid_json', 'the request body is empty; send a JSON object');
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/**
 * Validate a chat completion request body.
 * @throws GatewayError `invalid_request` with `param` set to the first offending field.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  const result = chatRequestSchema.safeParse(requireObject(body));
  if (!result.success) throw firstIssueError(result.error.issues);
  for (const m of result.data.messages) {
    if (m.role !== 'assistant' || !('reasoning_content' in m)) continue;
    const { reasoning_content: alias, ...rest } = m;
    Object.assign(m, { reasoning: rest.reasoning ?? alias });
    delete (m as { reasoning_content?: unknown }).reasoning_content;
  }
  return pickKnown<ChatRequest>(result.data, KNOWN_CHAT_FIELDS);
}

/**
 * Validate a legacy completion request body.
 * @throws GatewayError `invalid_request` with `param` set to the first offending field.
 */
export function parseCompletionRequest(body: unknown): CompletionRequest {
  const obj = requireObject(body);
  // Token-id prompts (`[1, 2]`, `[[1, 2]]`) name `prompt` itself, not the first array element.
  if (Array.isArray(obj.prompt) && obj.prompt.some((p) => typeof p === 'number' || Array.isArray(p))) {
    throw new GatewayError('invalid_request', 'prompt: must be a string (token-id prompts are not supported)', { param: 'prompt' });
  }
  const result = completionRequestSchema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  return pickKnown<CompletionRequest>(result.data, KNOWN_COMPLETION_FIELDS);
}

/** The output limit a request asks for: the larger of `max_tokens` and `max_completion_tokens`. */
export function requestedOutputLimit(req: { max_tokens?: number | null; max_completion_tokens?: number | null }): number | undefined {
  const a = req.max_tokens ?? undefined;
  const b = req.max_completion_tokens ?? undefined;
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}
