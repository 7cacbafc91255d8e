import { z } from 'zod';
import { GatewayError } from '../../../errors/gateway-error.js';
import { gatewayFields } from '../../gateway-fields.js';
import { firstIssueError, requireObject } from '../../validate.js';
import type { NativeGeminiRequest } from '../../../providers/gemini/native/generate-content.js';

/**
 * The Gemini API's `GenerateContentRequest` as the gateway validates it. The model and the
 * stream flag are in the URL (`/v1beta/models/{model}:streamGenerateContent?alt=sse`): the
 * route puts them into the body as `model`, `stream` and `alt` before the pipeline sees it
 * ({@link geminiRequestFromUrl}). Unknown members are kept (the native lane to a `gemini`
 * endpoint sends them on); the translation lists them as losses.
 * @see https://ai.google.dev/api/generate-content#request-body
 */

const part = z
  .object({
    text: z.string().optional(),
    inlineData: z.object({ mimeType: z.string().min(1), data: z.string() }).passthrough().optional(),
    fileData: z.object({ mimeType: z.string().optional(), fileUri: z.string().min(1) }).passthrough().optional(),
    functionCall: z.object({ id: z.string().optional(), name: z.string().min(1), args: z.record(z.unknown()).nullable().optional() }).passthrough().optional(),
    functionResponse: z.object({ id: z.string().optional(), name: z.string().min(1), response: z.record(z.unknown()).nullable().optional() }).passthrough().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
  })
  .passthrough();

/** A turn: `user` or `model` (`function`: the older API's role of function responses). */
const content = z.object({ role: z.enum(['user', 'model', 'function'], { message: 'must be "user" or "model"' }).optional(), parts: z.array(part).default([]) }).passthrough();

const functionDeclaration = z
  .object({
    name: z.string().min(1).max(128),
    description: z.string().optional(),
    parameters: z.record(z.unknown()).optional(),
    parametersJsonSchema: z.unknown().optional(),
  })
  .passthrough();

const tool = z.object({ functionDeclarations: z.array(functionDeclaration).optional() }).passthrough();

const thinkingConfig = z
  .object({
    includeThoughts: z.boolean().optional(),
    thinkingBudget: z.number().int().min(-1).optional(),
    thinkingLevel: z.enum(['MINIMAL', 'LOW', 'MEDIUM', 'HIGH', 'THINKING_LEVEL_UNSPECIFIED']).optional(),
  })
  .passthrough();

const generationConfig = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    topP: z.number().min(0).max(1).optional(),
    topK: z.number().int().min(1).optional(),
    candidateCount: z.literal(1, { errorMap: () => ({ message: 'only 1 candidate per request is supported' }) }).optional(),
    maxOutputTokens: z.number().int().min(1).max(100_000_000).optional(),
    stopSequences: z.array(z.string()).max(5, 'at most 5 stop sequences are allowed').optional(),
    presencePenalty: z.number().optional(),
    frequencyPenalty: z.number().optional(),
    seed: z.number().int().optional(),
    responseMimeType: z.string().optional(),
    responseSchema: z.record(z.unknown()).optional(),
    responseJsonSchema: z.unknown().optional(),
    thinkingConfig: thinkingConfig.optional(),
  })
  .passthrough();

export const geminiRequestSchema = z
  .object({
    model: z.string().min(1, 'the model in the URL is empty'),
    stream: z.boolean(),
    alt: z.enum(['sse', 'json']),
    // Google refuses a request with nothing to answer: at least one part in some content.
    contents: z
      .array(content)
      .min(1, 'at least one content is required')
      .refine((cs) => cs.some((c) => c.parts.length > 0), 'every content has empty parts: at least one part is required'),
    // Its role is ignored by Google (clients send none, `user` or `system`).
    systemInstruction: z.union([z.object({ role: z.string().optional(), parts: z.array(part).default([]) }).passthrough(), z.string()]).optional(),
    tools: z.array(tool).max(512, 'at most 512 tools are allowed').optional(),
    toolConfig: z
      .object({
        functionCallingConfig: z
          .object({ mode: z.enum(['AUTO', 'ANY', 'NONE', 'VALIDATED', 'MODE_UNSPECIFIED']).optional(), allowedFunctionNames: z.array(z.string()).optional() })
          .passthrough()
          .optional(),
      })
      .passthrough()
      .optional(),
    generationConfig: generationConfig.optional(),
    safetySettings: z.array(z.object({ category: z.string(), threshold: z.string() }).passthrough()).optional(),
    cachedContent: z.string().optional(),
    ...gatewayFields,
  })
  .passthrough();

/** A validated Gemini API request: the body plus `model`, `stream` and `alt` from the URL. */
export type GeminiApiRequest = z.infer<typeof geminiRequestSchema> & NativeGeminiRequest;
export type GeminiApiPart = z.infer<typeof part>;
export type GeminiApiContent = z.infer<typeof content>;

/**
 * Validate a Gemini request (the route has put the URL's model and stream flag in it).
 * @throws GatewayError `invalid_request` with `param` naming the first bad field; both
 *   `thinkingBudget` and `thinkingLevel` set is refused as Gemini refuses it.
 */
export function parseGeminiRequest(body: unknown): GeminiApiRequest {
  const obj = requireObject(body);
  const result = geminiRequestSchema.safeParse(obj);
  if (!result.success) throw firstIssueError(result.error.issues);
  const thinking = result.data.generationConfig?.thinkingConfig;
  if (thinking?.thinkingBudget !== undefined && thinking.thinkingLevel !== undefined) {
    throw new GatewayError('invalid_request', 'generationConfig.thinkingConfig: set thinkingBudget or thinkingLevel, not both', { param: 'generationConfig.thinkingConfig' });
  }
  return result.data as GeminiApiRequest;
}

/**
 * The body the pipeline receives for a Gemini route: the client's body with the URL's model
 * (`models/` taken off), the stream flag of the method and the framing (`alt=sse`, else the
 * streamed JSON array) in it. A body that is not an object is passed on as is, for the schema
 * to refuse.
 */
export function geminiRequestFromUrl(body: unknown, url: { resource: string; action: string; query: Readonly<Record<string, unknown>> }): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const stream = url.action === 'streamGenerateContent';
  return { ...(body as Record<string, unknown>), model: url.resource, stream, alt: stream && url.query.alt !== 'sse' ? 'json' : 'sse' };
}
