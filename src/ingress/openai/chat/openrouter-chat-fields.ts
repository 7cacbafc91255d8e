import { z } from 'zod';
import type { ChatRequest } from '../../../core/chat-types.js';
import { ignoredProviderMembers } from '../../gateway-fields.js';

/**
 * OpenRouter's chat request fields beyond OpenAI's (docs/openrouter-compatibility.md has the
 * full table): each is honoured where the gateway can, otherwise accepted and named in the
 * generation record's `warnings`, never a 400 for a body OpenRouter's spec allows.
 * @see https://openrouter.ai/docs/api-reference/chat-completion
 */

const nullish = <T extends z.ZodTypeAny>(t: T) => t.nullable().optional();

/** Fields accepted and not acted on, each with why (the warning's text). */
const IGNORED_FIELDS: Readonly<Record<string, string>> = {
  plugins: 'plugins are OpenRouter-hosted features (web search, moderation, file parsing, response healing …) the gateway does not run',
  debug: 'debug (echo_upstream_body) is not supported',
  trace: 'trace is not forwarded (the gateway records its own generation)',
  image_config: 'image_config: image output is not supported',
  prediction: 'prediction (predicted outputs) is not forwarded',
  top_a: 'top_a is not forwarded',
  web_search_options: 'web_search_options: web search is not supported',
  stop_server_tools_when: 'stop_server_tools_when: server tools are not supported',
  prompt_cache_options: 'prompt_cache_options is not forwarded (block-level cache_control is)',
  transforms: 'transforms (middle-out compression) are not applied',
};

const IGNORED_ENTRIES = Object.entries(IGNORED_FIELDS);

/** `delete req[k]`, skipped when there is nothing to delete (a delete costs even then). */
function drop(req: Record<string, unknown>, k: string): void {
  if (k in req) delete req[k];
}

/** Spread into the chat request object schema. */
export const openRouterChatFields = {
  /** Absent only when `preset` names one (the preset then supplies the model). */
  model: z.string().min(1, 'is required').optional(),
  preset: z.string().regex(/^[a-z0-9][a-z0-9._-]*$/i, 'must be a preset slug').optional(),
  include_reasoning: nullish(z.boolean()),
  session_id: z.string().min(1).max(256).optional(),
  prompt_cache_key: nullish(z.string().min(1).max(1024)),
  cache_control: z.object({ type: z.literal('ephemeral'), ttl: z.enum(['5m', '1h']).optional() }).strict().optional(),
  service_tier: nullish(z.enum(['auto', 'default', 'fast', 'flex', 'priority', 'scale'])),
  verbosity: nullish(z.enum(['low', 'medium', 'high'])),
  modalities: z.array(z.enum(['text', 'image', 'audio'])).optional(),
  metadata: z
    .record(z.string().max(64, 'keys must be at most 64 characters'), z.string().max(512, 'values must be at most 512 characters'))
    .refine((m) => Object.keys(m).length <= 16, 'at most 16 pairs')
    .optional(),
  usage: z.object({ include: z.boolean().optional() }).passthrough().optional(),
  user: z.string().max(16_384).optional(),
  plugins: z.array(z.object({ id: z.string().min(1) }).passthrough()).optional(),
  debug: z.object({}).passthrough().optional(),
  trace: z.object({}).passthrough().optional(),
  image_config: z.record(z.unknown()).optional(),
  prediction: nullish(z.object({ type: z.string() }).passthrough()),
  top_a: nullish(z.number().min(0).max(1)),
  web_search_options: z.object({}).passthrough().optional(),
  stop_server_tools_when: z.array(z.unknown()).optional(),
  prompt_cache_options: nullish(z.object({}).passthrough()),
  route: nullish(z.enum(['fallback', 'sort'])),
  transforms: z.array(z.string()).optional(),
};

/** An OpenRouter server tool (`openrouter:web_search`, `web_search` …): any tool whose type is not `function`. */
export const serverTool = z.object({ type: z.string().refine((t) => t !== 'function') }).passthrough();

/** A response format the gateway cannot pass on (`grammar`, `python`). */
export const otherResponseFormat = z.object({ type: z.enum(['grammar', 'python']) }).passthrough();

type Parsed = Record<string, unknown> & { messages: unknown[] };

/**
 * Turn OpenRouter's fields into the internal request, in place, and collect the warnings:
 * `include_reasoning` (false = `reasoning.exclude`, true = `reasoning: {}`), `session_id`
 * (= `op.session`, which wins), `service_tier: fast` (= `priority`), server tools and
 * grammar/python response formats removed, ignored fields named.
 */
export function applyOpenRouterChatFields(req: Parsed): string[] {
  const warnings: string[] = [];
  if (req.include_reasoning != null) {
    const reasoning = (req.reasoning as ChatRequest['reasoning']) ?? {};
    req.reasoning = req.include_reasoning ? reasoning : { ...reasoning, exclude: true };
  }
  drop(req, 'include_reasoning');
  if (req.reasoning && typeof req.reasoning === 'object') {
    const r = req.reasoning as Record<string, unknown>;
    for (const k of Object.keys(r)) if (r[k] === null) delete r[k];
  }
  if (req.reasoning === null) drop(req, 'reasoning');
  if (typeof req.session_id === 'string') {
    const op = (req.op as ChatRequest['op']) ?? {};
    req.op = { ...op, session: op.session ?? req.session_id };
  }
  drop(req, 'session_id');
  if (req.service_tier === 'fast') req.service_tier = 'priority';
  for (const k of ['prompt_cache_key', 'service_tier', 'verbosity'] as const) if (req[k] === null) drop(req, k);
  drop(req, 'usage');
  if (Array.isArray(req.modalities) && req.modalities.some((m) => m !== 'text')) {
    warnings.push(`modalities: only text output is supported (asked: ${(req.modalities as string[]).join(', ')})`);
  }
  drop(req, 'modalities');
  if (Array.isArray(req.tools)) {
    const server = (req.tools as Array<{ type: string }>).filter((t) => t.type !== 'function');
    if (server.length > 0) {
      warnings.push(`tools: server tools are not supported and were removed (${server.map((t) => t.type).join(', ')})`);
      req.tools = (req.tools as Array<{ type: string }>).filter((t) => t.type === 'function');
      if ((req.tools as unknown[]).length === 0) drop(req, 'tools');
    }
  }
  const format = req.response_format as { type?: string } | undefined;
  if (format && (format.type === 'grammar' || format.type === 'python')) {
    warnings.push(`response_format: type ${format.type} is not supported and was removed`);
    drop(req, 'response_format');
  }
  if (req.route === 'sort' || req.route === 'fallback') {
    // Deprecated alias of provider.sort.partition: fallback = model, sort = none.
    const provider = (req.provider as ChatRequest['provider']) ?? {};
    provider.sort_partition ??= req.route === 'sort' ? 'none' : 'model';
    req.provider = provider;
  }
  drop(req, 'route');
  for (const [field, why] of IGNORED_ENTRIES) {
    if (req[field] === undefined || req[field] === null) continue;
    if (field !== 'plugins' || (req.plugins as unknown[]).length > 0) warnings.push(why);
    drop(req, field);
  }
  for (const member of ignoredProviderMembers(req.provider as ChatRequest['provider'])) warnings.push(`${member} is not supported and was ignored`);
  return warnings;
}
