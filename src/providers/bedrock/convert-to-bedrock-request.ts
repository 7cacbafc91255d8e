import type { ChatMessage, ChatRequest, ReasoningDetail } from '../../core/chat-types.js';
import { parameterGate } from '../parameter-gate.js';
import { requestedOutputLimit } from '../../core/output-limit.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ProviderTarget, UpstreamCall } from '../types.js';
import { planThinking, thinkingBudgetFor, wantsSummarizedThinking } from '../anthropic/anthropic-thinking.js';
import type { AnthropicAssistantBlock, AnthropicCacheControl, AnthropicMessage, AnthropicTextBlock, AnthropicUserBlock } from '../anthropic/anthropic-wire-types.js';
import { ANTHROPIC_REASONING_FORMAT, convertToAnthropicMessages } from '../anthropic/convert-to-anthropic-messages.js';
import type { BedrockCredentials } from './bedrock-credentials.js';
import type {
  BedrockCachePoint,
  BedrockContentBlock,
  BedrockConverseRequest,
  BedrockImageFormat,
  BedrockMessage,
  BedrockSystemBlock,
  BedrockToolChoice,
  BedrockToolConfig,
  BedrockToolSpec,
} from './bedrock-wire-types.js';

/** The `format` of the reasoning details this kind produces and accepts back (signed Converse `reasoningContent`). */
export const BEDROCK_REASONING_FORMAT = 'amazon-bedrock-converse-v1';

/** The region signing and the default host use when nothing names one (a `base_url` without a region in its host). */
export const FALLBACK_REGION = 'us-east-1';

/** Request fields with no Converse equivalent: always dropped (and listed) when present. */
const NO_EQUIVALENT = ['seed', 'presence_penalty', 'frequency_penalty', 'repetition_penalty', 'min_p', 'logit_bias', 'logprobs', 'top_logprobs', 'service_tier', 'verbosity', 'user'] as const;

/** What a Bedrock provider's adapter reads of its config. */
export interface BedrockSettings {
  readonly region?: string | undefined;
}

/**
 * The region of one endpoint: its own `bedrock.region`, else the provider's, else the one in a
 * `base_url` host `bedrock-runtime[-fips].{region}.…` (a VPC endpoint's is
 * `…bedrock-runtime.{region}.vpce.amazonaws.com`), else {@link FALLBACK_REGION}.
 */
export function bedrockRegion(target: ProviderTarget): string {
  const own = target.endpoint.bedrock?.region ?? target.provider.bedrock?.region;
  if (own) return own;
  const base = target.provider.base_url;
  const m = base ? /bedrock-runtime(?:-fips)?\.([a-z]{2}(?:-[a-z]+)+-\d+)\./.exec(new URL(base).hostname) : null;
  return m?.[1] ?? FALLBACK_REGION;
}

/**
 * `<host>/model/<modelId>/<operation>`: the host is the provider's `base_url` (trailing slashes
 * stripped), else `https://bedrock-runtime.{region}.amazonaws.com`; the model id (a base model,
 * an inference profile `us.…` / `eu.…` / `global.…`, or an ARN) is percent-encoded whole
 * (`:` → `%3A`, `/` → `%2F`), as the AWS SDK sends it.
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-use.html
 */
export function bedrockModelUrl(target: ProviderTarget, operation: 'converse' | 'converse-stream' | 'invoke' | 'invoke-with-response-stream' | 'count-tokens'): string {
  const base = target.provider.base_url ? target.provider.base_url.replace(/\/+$/, '') : `https://bedrock-runtime.${bedrockRegion(target)}.amazonaws.com`;
  return `${base}/model/${encodeURIComponent(target.endpoint.upstream_model)}/${operation}`;
}

/**
 * The headers of one call: content type and accept, the provider's own `headers` (not signed;
 * never replacing a signed one, `authorization`, `host` or an `x-amz-*` header), then the credential's (the SigV4 headers over the exact URL and body, or the API key's bearer).
 * @throws GatewayError `upstream_auth_failed` when no credentials can be obtained.
 */
export async function bedrockHeaders(target: ProviderTarget, credentials: BedrockCredentials, url: string, body: string, stream: boolean): Promise<Record<string, string>> {
  const signed: Record<string, string> = { 'content-type': 'application/json', accept: stream ? 'application/vnd.amazon.eventstream' : 'application/json' };
  // The target's own key first: with `api_keys` each key's provider view carries its key (the
  // credential of the adapter is the provider's, built once).
  const key = target.provider.api_key;
  const auth = key ? { authorization: `Bearer ${key}` } : await credentials.headers({ url, headers: signed, body }, bedrockRegion(target));
  const headers: Record<string, string> = { ...signed };
  for (const [k, v] of Object.entries(target.provider.headers)) {
    const name = k.toLowerCase();
    // Never over a signed header or the auth ones: the signature covers their exact values.
    if (!(name in signed) && name !== 'authorization' && name !== 'host' && !name.startsWith('x-amz-')) headers[name] = v;
  }
  return { ...headers, ...auth };
}

const IMAGE_FORMATS: Readonly<Record<string, BedrockImageFormat>> = { 'image/png': 'png', 'image/jpeg': 'jpeg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** A cache breakpoint block (`ttl` kept when it is one Bedrock knows). */
function cachePoint(cc: AnthropicCacheControl | { type: 'ephemeral'; ttl?: string }): BedrockCachePoint {
  return cc.ttl === '5m' || cc.ttl === '1h' ? { cachePoint: { type: 'default', ttl: cc.ttl } } : { cachePoint: { type: 'default' } };
}

/**
 * The request's messages with this kind's reasoning details relabelled for the Anthropic
 * conversion (which keeps only its own format): the block structure it builds (signed thinking,
 * redacted thinking) is what Converse's `reasoningContent` echoes. Details of other kinds are
 * dropped by it, as they would be refused.
 */
function relabelReasoning(messages: ChatMessage[]): ChatMessage[] {
  const relabel = (d: ReasoningDetail): ReasoningDetail | null => (d.format === BEDROCK_REASONING_FORMAT ? { ...d, format: ANTHROPIC_REASONING_FORMAT } : d.format === undefined ? d : null);
  return messages.map((m) => (m.role === 'assistant' && m.reasoning_details?.length ? { ...m, reasoning_details: m.reasoning_details.map(relabel).filter((d): d is ReasoningDetail => d !== null) } : m));
}

/** Images by URL are not fetched: Converse takes bytes (or S3 locations) only. */
function refuseImageUrls(messages: ChatMessage[]): void {
  messages.forEach((m, i) => {
    if (m.role !== 'user' || typeof m.content === 'string') return;
    m.content.forEach((part, j) => {
      if (part.type === 'image_url' && /^https?:\/\//i.test(part.image_url.url)) {
        const param = `messages[${i}].content[${j}].image_url.url`;
        throw new GatewayError('invalid_request', `${param}: Amazon Bedrock takes images as bytes only; send the image as a base64 data: URL`, { param });
      }
    });
  });
}

/** Converse content of one Anthropic-shaped block (the shared conversion's output), cache breakpoints as `cachePoint` blocks after it. */
function toBedrockBlocks(block: AnthropicUserBlock | AnthropicAssistantBlock, docs: { n: number }): BedrockContentBlock[] {
  switch (block.type) {
    case 'text':
      return block.cache_control ? [{ text: block.text }, cachePoint(block.cache_control)] : [{ text: block.text }];
    case 'image': {
      if (block.source.type !== 'base64') return [];
      return [{ image: { format: IMAGE_FORMATS[block.source.media_type] ?? 'png', source: { bytes: block.source.data } } }];
    }
    case 'document': {
      const name = `document ${++docs.n}`;
      if (block.source.type === 'base64') return [{ document: { format: 'pdf', name, source: { bytes: block.source.data } } }];
      if (block.source.type === 'text') return [{ document: { format: 'txt', name, source: { text: block.source.data } } }];
      return [];
    }
    case 'tool_use':
      return [{ toolUse: { toolUseId: block.id, name: block.name, input: block.input } }];
    case 'tool_result': {
      const content = typeof block.content === 'string' ? [{ text: block.content }] : (block.content ?? []).map((t: AnthropicTextBlock) => ({ text: t.text }));
      return [{ toolResult: { toolUseId: block.tool_use_id, content: content.length > 0 ? content : [{ text: '' }] } }];
    }
    case 'thinking':
      return [{ reasoningContent: { reasoningText: { text: block.thinking, signature: block.signature } } }];
    case 'redacted_thinking':
      return [{ reasoningContent: { redactedContent: block.data } }];
  }
}

/** The Converse prompt of a chat request: system blocks, messages, whether the history holds tool blocks, and the tool names it uses. */
export function convertToBedrockMessages(input: ChatMessage[]): { system: BedrockSystemBlock[]; messages: BedrockMessage[]; hasToolBlocks: boolean; historyTools: string[] } {
  refuseImageUrls(input);
  const prompt = convertToAnthropicMessages(relabelReasoning(input));
  const system: BedrockSystemBlock[] = prompt.system.flatMap((b): BedrockSystemBlock[] => (b.cache_control ? [{ text: b.text }, cachePoint(b.cache_control)] : [{ text: b.text }]));
  const docs = { n: 0 };
  const historyTools = new Set<string>();
  const messages = prompt.messages.map((m: AnthropicMessage): BedrockMessage => ({
    role: m.role,
    content: (m.content as Array<AnthropicUserBlock | AnthropicAssistantBlock>).flatMap((b) => {
      if (b.type === 'tool_use') historyTools.add(b.name);
      return toBedrockBlocks(b, docs);
    }),
  }));
  return { system, messages, hasToolBlocks: prompt.hasToolBlocks, historyTools: [...historyTools] };
}

/** A stub declared for a tool the history used but the request no longer lists (Converse refuses tool blocks without `toolConfig`). */
const stubTool = (name: string): BedrockToolSpec => ({ toolSpec: { name, description: 'Used earlier in this conversation; not available now. Do not call it.', inputSchema: { json: { type: 'object', properties: {} } } } });

/** `stop` as `stopSequences`; empty sequences are left out. */
function stopSequences(stop: string | string[]): string[] {
  return (typeof stop === 'string' ? [stop] : stop).filter((s) => s !== '');
}

/**
 * Build the Converse (or ConverseStream) call for an OpenAI-format chat request:
 * - messages and `system` through the anthropic kind's message conversion (system and developer
 *   messages hoisted, tool results in user turns, turns of one role merged), then as Converse
 *   blocks: `text`, `image` (base64 data URLs; http URLs are refused), `document` (PDF bytes,
 *   plain text; named `document N`), `toolUse` / `toolResult`, `reasoningContent` (the signed
 *   reasoning and redacted reasoning of earlier answers, echoed unmodified), and a `cachePoint`
 *   after every part marked `cache_control` (and after the last message for the top-level
 *   `cache_control`);
 * - `inferenceConfig`: `maxTokens` (the request's limit, else the endpoint's
 *   `max_completion_tokens`, else the model's default), `temperature`, `top_p` → `topP`, `stop`
 *   → `stopSequences`; `top_k` → `additionalModelRequestFields.top_k`;
 * - `tools` → `toolConfig.tools[].toolSpec`; `tool_choice` auto → `{auto}`, required → `{any}`,
 *   a function → `{tool: {name}}`, none → no `toolConfig` (or, when the history holds tool
 *   blocks, the tools without a choice, with a warning); tools the history used but the request
 *   omits are declared as stubs;
 * - `reasoning` / `reasoning_effort` on Anthropic models → `additionalModelRequestFields.thinking`
 *   with the anthropic kind's budget rules (temperature, top_k and a low top_p then not sent);
 *   on other models dropped with a warning;
 * - `response_format` json_schema → `outputConfig.textFormat` (json_object: not sent, warned);
 *   `metadata` → `requestMetadata`;
 * - optional fields the endpoint does not list in `supported_parameters` are dropped and named in
 *   `dropped`; fields with no Converse equivalent (seed, penalties, logit_bias, logprobs, user, …)
 *   are always dropped.
 * The call is signed (or carries the API key) over its exact bytes.
 * @throws GatewayError `invalid_request` (with `param`) for content Bedrock cannot take;
 *   `upstream_auth_failed` when no credentials can be obtained.
 * @see https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html
 */
export async function convertToBedrockRequest(req: ChatRequest, target: ProviderTarget, stream: boolean, credentials: BedrockCredentials): Promise<UpstreamCall> {
  const supported = target.endpoint.supported_parameters as readonly string[];
  const { dropped, present, allow } = parameterGate(req, supported);
  const warnings: string[] = [];
  const model = target.endpoint.upstream_model;
  const anthropicModel = /(^|[.:/])anthropic\./.test(model);

  const prompt = convertToBedrockMessages(req.messages);
  if (prompt.messages.length === 0) {
    throw new GatewayError('invalid_request', 'messages: Amazon Bedrock needs at least one user or assistant message with non-empty content', { param: 'messages' });
  }
  const body: BedrockConverseRequest = { messages: prompt.messages };
  if (prompt.system.length > 0) body.system = prompt.system;
  if (req.cache_control) prompt.messages.at(-1)!.content.push(cachePoint(req.cache_control));

  const inference: BedrockConverseRequest['inferenceConfig'] = {};
  const additional: Record<string, unknown> = {};
  let maxTokens = requestedOutputLimit(req) ?? target.endpoint.max_completion_tokens;
  let thinking = false;
  const reasoning = allow('reasoning', 'reasoning') ? req.reasoning : undefined;
  const reasoningEffort = allow('reasoning_effort', 'reasoning_effort', 'reasoning') ? req.reasoning_effort : undefined;
  if (reasoning !== undefined || (reasoningEffort !== undefined && reasoningEffort !== null)) {
    const limit = maxTokens ?? 4096;
    const budget = thinkingBudgetFor({ reasoning, reasoningEffort, maxTokens: limit });
    if (budget !== null && !anthropicModel) {
      warnings.push(`reasoning not sent: the gateway asks for reasoning through Converse only on Anthropic models (${model} is not one)`);
    } else if (budget !== null) {
      const plan = planThinking(budget, limit, target.endpoint.max_completion_tokens, reasoning?.exclude === true, wantsSummarizedThinking(model, reasoning?.exclude === true));
      warnings.push(...plan.warnings);
      if (plan.thinking) {
        additional.thinking = plan.thinking;
        maxTokens = plan.maxTokens;
        thinking = true;
      }
    }
  }
  if (maxTokens !== undefined) inference.maxTokens = maxTokens;
  if (allow('temperature', 'temperature')) {
    if (thinking) warnings.push(`temperature ${req.temperature} not sent: Anthropic models do not accept it with extended thinking`);
    else inference.temperature = req.temperature as number;
  }
  if (allow('top_p', 'top_p')) {
    if (thinking && (req.top_p as number) < 0.95) warnings.push(`top_p ${req.top_p} not sent: with extended thinking Anthropic models accept only 0.95 to 1`);
    else inference.topP = req.top_p as number;
  }
  if (allow('top_k', 'top_k')) {
    if (thinking) warnings.push(`top_k ${req.top_k} not sent: Anthropic models do not accept it with extended thinking`);
    else additional.top_k = req.top_k;
  }
  if (allow('stop', 'stop')) {
    const seqs = stopSequences(req.stop as string | string[]);
    if (seqs.length > 0) inference.stopSequences = seqs;
  }
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference;

  const tools = allow('tools', 'tools') ? (req.tools ?? []) : [];
  const choice = allow('tool_choice', 'tool_choice') ? req.tool_choice : undefined;
  if (present('parallel_tool_calls')) dropped.push('parallel_tool_calls');
  const specs: BedrockToolSpec[] = tools.map((t) => {
    const { name, description, parameters } = t.function;
    const schema = parameters ?? { type: 'object', properties: {} };
    const spec: BedrockToolSpec = { toolSpec: { name, inputSchema: { json: schema.type === undefined ? { type: 'object', ...schema } : schema } } };
    if (description !== undefined) spec.toolSpec.description = description;
    return spec;
  });
  for (const name of prompt.historyTools) if (!specs.some((s) => s.toolSpec.name === name)) specs.push(stubTool(name));
  if (specs.length > 0 && (choice !== 'none' || prompt.hasToolBlocks)) {
    const config: BedrockToolConfig = { tools: specs };
    let toolChoice: BedrockToolChoice | undefined;
    if (choice === 'required') toolChoice = { any: {} };
    else if (choice === 'auto') toolChoice = { auto: {} };
    else if (typeof choice === 'object') toolChoice = { tool: { name: choice.function.name } };
    else if (choice === 'none') warnings.push('tool_choice "none" is not in Converse: the tools were sent (the history uses them) and the model may call one');
    if (toolChoice && thinking && !('auto' in toolChoice)) {
      warnings.push('tool_choice not sent: Anthropic models accept only "auto" with extended thinking');
      toolChoice = undefined;
    }
    if (toolChoice) config.toolChoice = toolChoice;
    body.toolConfig = config;
  }

  if (allow('response_format', 'response_format', 'structured_outputs')) {
    const format = req.response_format!;
    if (format.type === 'json_schema' && format.json_schema.schema) {
      const jsonSchema: { schema: string; name?: string; description?: string } = { schema: JSON.stringify(format.json_schema.schema), name: format.json_schema.name };
      if (format.json_schema.description !== undefined) jsonSchema.description = format.json_schema.description;
      body.outputConfig = { textFormat: { type: 'json_schema', structure: { jsonSchema } } };
    } else if (format.type !== 'text') {
      warnings.push(`response_format ${format.type} not sent: Converse takes a JSON schema only`);
    }
  }
  if (present('metadata')) body.requestMetadata = req.metadata!;
  if (Object.keys(additional).length > 0) body.additionalModelRequestFields = additional;
  for (const field of NO_EQUIVALENT) if (present(field) && !dropped.includes(field)) dropped.push(field);

  const url = bedrockModelUrl(target, stream ? 'converse-stream' : 'converse');
  const text = JSON.stringify(body);
  return { url, headers: await bedrockHeaders(target, credentials, url, text, stream), body: text, dropped, warnings, ...(stream ? { streamFraming: 'aws-eventstream' as const } : {}) };
}
