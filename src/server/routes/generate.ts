import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatRequest, CompletionRequest } from '../../core/chat-types.js';
import { parseChatRequest, parseCompletionRequest } from '../../ingress/openai/chat/chat-request-schema.js';
import { GatewayError, toGatewayError } from '../../errors/gateway-error.js';
import { GenerationDraft } from '../../pipeline/generation-draft.js';
import { finishGeneration, runGeneration, type CreditLimit, type GenerationInput } from '../../pipeline/attempt-loop.js';
import { usdToPico } from '../../limits/credit.js';
import { periodStart } from '../../limits/limit-store.js';
import type { ApiKey } from '../../store/keys.js';
import type { GatewayRuntime } from '../../pipeline/runtime.js';
import { newGenerationId } from '../../util/ids.js';
import { sendError } from '../send-error.js';

/** A legacy completion as a chat request: the prompt becomes one user message. */
export function completionToChat(req: CompletionRequest): ChatRequest {
  const prompt = Array.isArray(req.prompt) ? req.prompt.join('') : req.prompt;
  const chat: ChatRequest = { model: req.model, messages: [{ role: 'user', content: prompt }] };
  for (const k of ['stream', 'max_tokens', 'temperature', 'top_p', 'stop', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'seed', 'user', 'models', 'provider', 'op'] as const) {
    if (req[k] !== undefined && req[k] !== null) (chat as unknown as Record<string, unknown>)[k] = req[k];
  }
  return chat;
}

function peek(body: unknown, field: string): unknown {
  return body && typeof body === 'object' ? (body as Record<string, unknown>)[field] : undefined;
}

/**
 * Handle one generation route: validate, open the generation record, run it. A request that
 * fails validation is still recorded (status `error`), so every accepted request leaves one row.
 */
async function handle(rt: GatewayRuntime, api: 'chat' | 'completions', req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const model = peek(req.body, 'model');
  const draft = new GenerationDraft(newGenerationId(), req.id, req.apiKey.isAdmin ? null : req.apiKey.id, api, peek(req.body, 'stream') === true, typeof model === 'string' ? model.slice(0, 200) : '');
  let input: GenerationInput;
  try {
    if (api === 'chat') input = { api, request: parseChatRequest(req.body) };
    else {
      const request = parseCompletionRequest(req.body);
      input = { api, request, chat: completionToChat(request) };
    }
  } catch (thrown) {
    refuse(rt, draft, reply, thrown);
    return;
  }
  const op = input.request.op;
  const key = req.apiKey;
  draft.tags = op?.tags ?? [];
  draft.session = op?.session ?? null;
  draft.retention = op?.retention ?? key.settings.retention ?? rt.config.retention;
  let credit: CreditLimit | undefined;
  try {
    enforceAllowedModels(key, input);
    await enforceRateLimits(rt, key, draft);
    if (key.settings.limit !== null) {
      credit = { keyId: key.id, limitPico: usdToPico(key.settings.limit), periodStart: periodStart(key.settings.limit_reset, Date.now()) };
    }
  } catch (thrown) {
    refuse(rt, draft, reply, thrown);
    return;
  }
  await runGeneration(rt, input, draft, reply, credit);
}

/** Refuse a request before any upstream attempt: record it, then send the error envelope. */
function refuse(rt: GatewayRuntime, draft: GenerationDraft, reply: FastifyReply, thrown: unknown): void {
  const err = toGatewayError(thrown);
  draft.status = 'error';
  draft.errorCode = err.code;
  draft.errorMessage = err.message;
  draft.httpStatus = err.status;
  finishGeneration(rt, draft);
  for (const [k, v] of Object.entries(draft.extraHeaders)) reply.header(k, v);
  reply.header('x-op-generation-id', draft.id);
  sendError(reply, err, draft.requestId);
}

/**
 * A key with `allowed_models` may only ask for those: `model` must be allowed (403
 * `model_not_allowed`); disallowed entries of `models` are dropped.
 */
function enforceAllowedModels(key: ApiKey, input: GenerationInput): void {
  const allowed = key.settings.allowed_models;
  if (allowed.length === 0) return;
  const req = input.api === 'chat' ? input.request : input.chat;
  if (!allowed.includes(req.model)) {
    throw new GatewayError('model_not_allowed', `this key may not use model ${JSON.stringify(req.model)}; allowed: ${allowed.join(', ')}`, { param: 'model' });
  }
  if (req.models) req.models = req.models.filter((m) => allowed.includes(m));
}

/** Go-style duration for `x-ratelimit-reset-*` (`12s`, `1m0s`). */
const goDuration = (ms: number): string => {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
};

/**
 * Count the request against the key's requests-per-minute limit and check its tokens-per-minute
 * limit; sets `x-ratelimit-*` headers on the response.
 * @throws GatewayError `rate_limited` (429, with Retry-After).
 */
async function enforceRateLimits(rt: GatewayRuntime, key: ApiKey, draft: GenerationDraft): Promise<void> {
  const { requests_per_minute: rpm, tokens_per_minute: tpm } = key.settings.rate_limit;
  const now = Date.now();
  if (rpm !== null) {
    const r = await rt.limits.hitRequests(key.id, rpm, now);
    Object.assign(draft.extraHeaders, { 'x-ratelimit-limit-requests': String(r.limit), 'x-ratelimit-remaining-requests': String(r.remaining), 'x-ratelimit-reset-requests': goDuration(r.resetMs) });
    if (!r.ok) {
      throw new GatewayError('rate_limited', `rate limit of ${rpm} requests per minute reached for this key; retry in ${Math.ceil(r.resetMs / 1000)} s`, { retryAfterSeconds: Math.max(1, Math.ceil(r.resetMs / 1000)) });
    }
  }
  if (tpm !== null) {
    const t = await rt.limits.checkTokens(key.id, tpm, now);
    Object.assign(draft.extraHeaders, { 'x-ratelimit-limit-tokens': String(t.limit), 'x-ratelimit-remaining-tokens': String(t.remaining), 'x-ratelimit-reset-tokens': goDuration(t.resetMs) });
    if (!t.ok) {
      throw new GatewayError('rate_limited', `rate limit of ${tpm} tokens per minute reached for this key; retry in ${Math.ceil(t.resetMs / 1000)} s`, { retryAfterSeconds: Math.max(1, Math.ceil(t.resetMs / 1000)) });
    }
  }
}

/** `POST /v1/chat/completions` and `POST /v1/completions`. */
export function registerGenerateRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.post('/v1/chat/completions', (req, reply) => handle(rt(), 'chat', req, reply));
  app.post('/v1/completions', (req, reply) => handle(rt(), 'completions', req, reply));
}

