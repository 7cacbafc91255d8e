import { z } from 'zod';
import type { OpOptions, ProviderPreferences } from '../../../core/chat-types.js';
import { compileFastParser, INVALID, type FastParser } from '../../../util/compile-zod-parser.js';
import { gatewayFields } from '../../gateway-fields.js';
import { firstIssueError, requireObject } from '../../validate.js';

/**
 * The Messages API request schema (`POST /v1/messages`), plus the gateway fields (`models`,
 * `provider`, `op`). Known content block and tool types are checked field by field; block,
 * tool and top-level fields the gateway does not know (new server tools, `context_management`,
 * `output_config` …) are kept, because an `anthropic` upstream receives the body as sent.
 * Every bad value becomes a 400 `invalid_request` whose `param` names the field
 * (`messages[1].content[0].source`).
 * @see https://docs.anthropic.com/en/api/messages
 */

const cacheControl = z.object({ type: z.literal('ephemeral'), ttl: z.string().optional() }).passthrough();
const optCache = cacheControl.nullish();

const textBlock = z.object({ type: z.literal('text'), text: z.string(), cache_control: optCache }).passthrough();
const imageBlock = z
  .object({
    type: z.literal('image'),
    source: z.discriminatedUnion('type', [
      z.object({ type: z.literal('base64'), media_type: z.enum(['image/jpeg', 'image/png', 'image/gif', 'image/webp']), data: z.string().min(1) }).passthrough(),
      z.object({ type: z.literal('url'), url: z.string().min(1) }).passthrough(),
      z.object({ type: z.literal('file'), file_id: z.string().min(1) }).passthrough(),
    ]),
    cache_control: optCache,
  })
  .passthrough();
const documentBlock = z
  .object({
    type: z.literal('document'),
    source: z.discriminatedUnion('type', [
      z.object({ type: z.literal('base64'), media_type: z.literal('application/pdf'), data: z.string().min(1) }).passthrough(),
      z.object({ type: z.literal('text'), media_type: z.literal('text/plain'), data: z.string() }).passthrough(),
      z.object({ type: z.literal('url'), url: z.string().min(1) }).passthrough(),
      z.object({ type: z.literal('content'), content: z.union([z.string(), z.array(z.object({ type: z.string() }).passthrough())]) }).passthrough(),
      z.object({ type: z.literal('file'), file_id: z.string().min(1) }).passthrough(),
    ]),
    title: z.string().nullish(),
    context: z.string().nullish(),
    cache_control: optCache,
  })
  .passthrough();
const toolUseBlock = z
  .object({ type: z.literal('tool_use'), id: z.string().min(1), name: z.string().min(1), input: z.record(z.unknown()), cache_control: optCache })
  .passthrough();
const toolResultBlock = z
  .object({
    type: z.literal('tool_result'),
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(z.object({ type: z.string() }).passthrough())]).optional(),
    is_error: z.boolean().optional(),
    cache_control: optCache,
  })
  .passthrough();
const thinkingBlock = z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }).passthrough();
const redactedThinkingBlock = z.object({ type: z.literal('redacted_thinking'), data: z.string() }).passthrough();

/** Block types checked field by field; any other `type` is kept as sent. */
const KNOWN_BLOCKS: Readonly<Record<string, z.ZodTypeAny>> = {
  text: textBlock,
  image: imageBlock,
  document: documentBlock,
  tool_use: toolUseBlock,
  tool_result: toolResultBlock,
  thinking: thinkingBlock,
  redacted_thinking: redactedThinkingBlock,
};

/** Check `value` against `schema`, reporting its issues at `ctx`'s path. */
function refineWith(schema: z.ZodTypeAny, value: unknown, ctx: z.RefinementCtx): void {
  const r = schema.safeParse(value);
  if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ ...issue, path: issue.path } as z.IssueData);
}

const block = z
  .object({ type: z.string({ required_error: 'is required' }).min(1) })
  .passthrough()
  .superRefine((b, ctx) => {
    // Own members only: a block of type "toString" is an unknown type, not Object.prototype's method.
    const schema = Object.hasOwn(KNOWN_BLOCKS, b.type) ? KNOWN_BLOCKS[b.type] : undefined;
    if (schema) refineWith(schema, b, ctx);
  });

const content = z.union([z.string(), z.array(block)]);

const message = z.object({ role: z.enum(['user', 'assistant', 'system']), content }).passthrough();

const customTool = z
  .object({
    type: z.literal('custom').optional(),
    name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/, 'must be 1-128 characters of a-z, A-Z, 0-9, _ or -'),
    description: z.string().optional(),
    input_schema: z.object({ type: z.literal('object') }).passthrough(),
    cache_control: optCache,
    strict: z.boolean().optional(),
  })
  .passthrough();

/** A custom tool (no `type`, or `custom`), or a typed server/client tool such as `web_search_20250305`. */
const tool = z
  .object({ type: z.string().optional(), name: z.string({ required_error: 'is required' }).min(1) })
  .passthrough()
  .superRefine((t, ctx) => {
    if (t.type === undefined || t.type === 'custom') refineWith(customTool, t, ctx);
  });

const toolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('tool'), name: z.string().min(1), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('none') }),
]);

const thinking = z.discriminatedUnion('type', [
  z.object({ type: z.literal('enabled'), budget_tokens: z.number().int().min(1) }).passthrough(),
  z.object({ type: z.literal('disabled') }).passthrough(),
  z.object({ type: z.literal('adaptive') }).passthrough(),
]);

const system = z.union([z.string(), z.array(textBlock)]);

const baseShape = {
  model: z.string({ required_error: 'is required' }).min(1, 'must not be empty'),
  messages: z.array(message, { required_error: 'is required' }).min(1, 'must contain at least one message'),
  system: system.optional(),
  stop_sequences: z.array(z.string()).max(8192).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.object({ user_id: z.string().nullish() }).passthrough().optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  thinking: thinking.optional(),
  ...gatewayFields,
};

/**
 * Largest `max_tokens` accepted (tokens), the same bound as the OpenAI APIs' output limits: a
 * value past it (`1e308` is an integer to JSON) is a 400 naming `max_tokens`, not a request
 * that no endpoint can serve.
 */
const MAX_OUTPUT_TOKENS = 100_000_000;
const maxTokens = (required: boolean) =>
  z.number(required ? { required_error: 'is required' } : {}).int().min(1).max(MAX_OUTPUT_TOKENS, `must be at most ${MAX_OUTPUT_TOKENS}`);

const messagesRequestSchema = z
  .object({ ...baseShape, max_tokens: maxTokens(true) })
  .passthrough()
  .superRefine((req, ctx) => {
    if (req.tool_choice?.type === 'tool' && !req.tools?.some((t) => t.name === (req.tool_choice as { name: string }).name)) {
      ctx.addIssue({ code: 'custom', path: ['tool_choice', 'name'], message: `names no tool in tools: "${req.tool_choice.name}"` });
    }
  });

/** count_tokens takes the same body without `max_tokens` (and `stream`, ignored). */
const countTokensRequestSchema = z.object({ ...baseShape, max_tokens: maxTokens(false).optional() }).passthrough();

/**
 * The compiled validators (src/util/compile-zod-parser.ts). A block's and a tool's refinement checks
 * the parsed value against one more schema with zod; here that check is compiled too.
 */
function refinedBy(object: z.ZodTypeAny, schemaOf: (value: Record<string, unknown>) => FastParser | undefined): FastParser {
  const parse = compileFastParser(object);
  return (v) => {
    const out = parse(v);
    if (out === INVALID) return INVALID;
    const check = schemaOf(out as Record<string, unknown>);
    return check && check(out) === INVALID ? INVALID : out;
  };
}
const fastKnownBlocks = new Map(Object.entries(KNOWN_BLOCKS).map(([type, schema]) => [type as unknown, compileFastParser(schema)]));
const fastCustomTool = compileFastParser(customTool);
const fastOverrides = new Map<z.ZodTypeAny, FastParser>([
  [block, refinedBy(block._def.schema, (b) => fastKnownBlocks.get(b.type))],
  [tool, refinedBy(tool._def.schema, (t) => (t.type === undefined || t.type === 'custom' ? fastCustomTool : undefined))],
]);
/** The compiled request validators (`INVALID` for a body the schema refuses). Exported for the equivalence test. */
export const fastMessagesRequest = compileFastParser(messagesRequestSchema, fastOverrides);
/** See {@link fastMessagesRequest}. */
export const fastCountTokensRequest = compileFastParser(countTokensRequestSchema, fastOverrides);

/** `schema` on `obj`: the compiled validator, zod only for a refused body (the error is zod's). */
function validate(schema: z.ZodTypeAny, fast: FastParser, obj: Record<string, unknown>): MessagesRequest {
  const parsed = fast(obj);
  if (parsed !== INVALID) return parsed as MessagesRequest;
  const result = schema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  return result.data as MessagesRequest;
}

/** One content block as validated (known types checked, others kept as sent). */
export type MessagesBlock = { type: string } & Record<string, unknown>;

/** A validated Messages API request. Unknown top-level fields are kept (for the native lane). */
export interface MessagesRequest {
  model: string;
  max_tokens?: number;
  messages: Array<{ role: 'user' | 'assistant' | 'system'; content: string | MessagesBlock[] }>;
  system?: string | Array<{ type: 'text'; text: string; cache_control?: { type: 'ephemeral'; ttl?: string } | null }>;
  stop_sequences?: string[];
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  metadata?: { user_id?: string | null };
  tools?: Array<{ type?: string; name: string; description?: string; input_schema?: Record<string, unknown>; strict?: boolean } & Record<string, unknown>>;
  tool_choice?: { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean } | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean } | { type: 'none' };
  thinking?: { type: 'enabled'; budget_tokens: number } | { type: 'disabled' } | { type: 'adaptive' };
  models?: string[];
  provider?: ProviderPreferences;
  op?: OpOptions;
  [field: string]: unknown;
}

/**
 * Validate a Messages API request body.
 * @throws GatewayError `invalid_json` (empty body) or `invalid_request` with `param` set.
 */
export function parseMessagesRequest(body: unknown): MessagesRequest {
  return validate(messagesRequestSchema, fastMessagesRequest, requireObject(body));
}

/**
 * Validate a `count_tokens` request body (a Messages request without `max_tokens`).
 * @throws GatewayError as {@link parseMessagesRequest}.
 */
export function parseCountTokensRequest(body: unknown): MessagesRequest {
  return validate(countTokensRequestSchema, fastCountTokensRequest, requireObject(body));
}

/**
 * {@link parseMessagesRequest} (`count_tokens`: {@link parseCountTokensRequest}) with zod alone:
 * the reference the compiled validators are tested against.
 * @throws GatewayError as {@link parseMessagesRequest}.
 */
export function parseMessagesRequestWithZod(body: unknown, countTokens = false): MessagesRequest {
  const result = (countTokens ? countTokensRequestSchema : messagesRequestSchema).safeParse(requireObject(body));
  if (!result.success) throw firstIssueError(result.error.issues);
  return result.data as MessagesRequest;
}
