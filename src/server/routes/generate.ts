import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ChatRequest, CompletionRequest } from '../../api/chat-types.js';
import { parseChatRequest, parseCompletionRequest } from '../../api/request-schemas.js';
import { GatewayError, toGatewayError } from '../../errors/gateway-error.js';
import { GenerationDraft } from '../../gateway/generation-draft.js';
import { runGeneration, type GenerationInput } from '../../gateway/run-generation.js';
import type { GatewayRuntime } from '../../gateway/runtime.js';
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
    const err = toGatewayError(thrown);
    draft.status = 'error';
    draft.errorCode = err.code;
    draft.errorMessage = err.message;
    draft.httpStatus = err.status;
    rt.writer.enqueue(draft.toRow());
    sendError(reply, err, req.id);
    return;
  }
  const op = input.request.op;
  draft.tags = op?.tags ?? [];
  draft.session = op?.session ?? null;
  draft.retention = op?.retention ?? rt.config.retention;
  await runGeneration(rt, input, draft, reply);
}

/** `POST /v1/chat/completions` and `POST /v1/completions`. */
export function registerGenerateRoutes(app: FastifyInstance, rt: () => GatewayRuntime): void {
  app.post('/v1/chat/completions', (req, reply) => handle(rt(), 'chat', req, reply));
  app.post('/v1/completions', (req, reply) => handle(rt(), 'completions', req, reply));
  // Make a wrong method a clear 405 rather than a 404.
  for (const url of ['/v1/chat/completions', '/v1/completions']) {
    app.get(url, async () => {
      throw new GatewayError('method_not_allowed', `use POST for ${url}`);
    });
  }
}

export { GatewayError };
