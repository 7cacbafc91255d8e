import { z } from 'zod';
import type { ChatRequest } from '../../../core/chat-types.js';
import { compileFastParser, INVALID } from '../../../util/compile-zod-parser.js';
import { firstIssueError, pickKnown, requireObject } from '../../validate.js';
import { nullable, openAICommonFields, tokens } from '../openai-request-fields.js';
import { applyOpenRouterChatFields, openRouterChatFields, otherResponseFormat, serverTool } from './openrouter-chat-fields.js';

/**
 * The chat completion request schema (SPEC §2.1). Every bad value becomes a 400
 * `invalid_request` whose `param` names the field in dotted form (`messages[1].content`).
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */

/** OpenRouter sends `null` for unset `reasoning_details[]` fields (`signature: null`): read as absent. */
const absentIfNull = <T extends z.ZodTypeAny>(t: T) => t.nullish().transform((v: z.output<T> | null | undefined) => v ?? undefined);

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
            text: absentIfNull(z.string()),
            summary: absentIfNull(z.string()),
            signature: absentIfNull(z.string()),
            data: absentIfNull(z.string()),
            id: absentIfNull(z.string()),
            format: absentIfNull(z.string()),
            index: absentIfNull(z.number().int()),
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

export const chatRequestSchema = z
  .object({
    ...openAICommonFields,
    messages: z.array(message, { required_error: 'is required' }).min(1, 'must contain at least one message'),
    max_tokens: tokens,
    max_completion_tokens: tokens,
    top_k: nullable(z.number().int().min(0)),
    min_p: nullable(z.number().min(0).max(1)),
    repetition_penalty: nullable(z.number().gt(0).max(2)),
    logprobs: nullable(z.boolean()),
    top_logprobs: nullable(z.number().int().min(0).max(20)),
    tools: z.array(z.union([tool, serverTool])).max(512, 'at most 512 tools are allowed').optional(),
    tool_choice: toolChoice.optional(),
    parallel_tool_calls: nullable(z.boolean()),
    response_format: z.union([responseFormat, otherResponseFormat]).optional(),
    reasoning: nullable(
      z
        .object({
          effort: nullable(effort),
          max_tokens: nullable(z.number().int().min(0)),
          exclude: nullable(z.boolean()),
          enabled: nullable(z.boolean()),
          summary: nullable(z.enum(['auto', 'concise', 'detailed'])),
        })
        .passthrough(),
    ),
    reasoning_effort: nullable(effort),
    ...openRouterChatFields,
  })
  .passthrough()
  .superRefine((req, ctx) => {
    if (req.model === undefined && req.preset === undefined) ctx.addIssue({ code: 'custom', path: ['model'], message: 'is required' });
    if (req.top_logprobs != null && req.logprobs !== true) {
      ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'requires logprobs: true' });
    }
    if (req.tool_choice && typeof req.tool_choice === 'object') {
      const name = req.tool_choice.function.name;
      if (!req.tools?.some((t) => 'function' in t && (t.function as { name: string }).name === name)) {
        ctx.addIssue({ code: 'custom', path: ['tool_choice', 'function', 'name'], message: `names no tool in tools: "${name}"` });
      }
    }
    if (req.tool_choice === 'required' && !req.tools?.length) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: '"required" needs a non-empty tools list' });
    }
  });

const KNOWN_CHAT_FIELDS = new Set(Object.keys(chatRequestSchema._def.schema.shape));

/**
 * {@link chatRequestSchema} compiled (src/util/compile-zod-parser.ts): the same output as its
 * `safeParse` for every body it accepts, `INVALID` otherwise. Exported for the equivalence test.
 */
export const fastChatRequest = compileFastParser(chatRequestSchema);

type ParsedChat = z.output<typeof chatRequestSchema>;

/** zod's parse of the body. @throws GatewayError `invalid_request` for zod's first issue. */
function zodChatRequest(obj: Record<string, unknown>): ParsedChat {
  const result = chatRequestSchema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  return result.data;
}

/**
 * Validate a chat completion request body: the compiled validator, and zod itself only when
 * that refuses the body (so the error is zod's first issue).
 * @throws GatewayError `invalid_request` with `param` set to the first offending field.
 */
export function parseChatRequest(body: unknown): ChatRequest {
  const obj = requireObject(body);
  const fast = fastChatRequest(obj);
  return toChatRequest(fast !== INVALID ? (fast as ParsedChat) : zodChatRequest(obj));
}

/**
 * {@link parseChatRequest} with zod alone: the reference the compiled validator is tested against.
 * @throws GatewayError as {@link parseChatRequest}.
 */
export function parseChatRequestWithZod(body: unknown): ChatRequest {
  return toChatRequest(zodChatRequest(requireObject(body)));
}

/** The schema's output as the internal request: aliases read, OpenRouter's fields applied, unknown fields named and dropped. */
function toChatRequest(parsed: ParsedChat): ChatRequest {
  for (const m of parsed.messages) {
    if (m.role !== 'assistant' || !('reasoning_content' in m)) continue;
    const { reasoning_content: alias, ...rest } = m;
    Object.assign(m, { reasoning: rest.reasoning ?? alias });
    delete (m as { reasoning_content?: unknown }).reasoning_content;
  }
  const data = parsed as unknown as Record<string, unknown> & { messages: unknown[] };
  const warnings = applyOpenRouterChatFields(data);
  const unknown = Object.keys(data).filter((k) => !KNOWN_CHAT_FIELDS.has(k));
  if (unknown.length > 0) warnings.push(`unknown fields not sent upstream: ${unknown.slice(0, 16).join(', ')}`);
  if (data.model === undefined) data.model = `@preset/${String(data.preset)}`;
  const req = pickKnown<ChatRequest & { preset?: string }>(data, KNOWN_CHAT_FIELDS);
  if (warnings.length > 0) req.warnings = warnings;
  return req;
}
