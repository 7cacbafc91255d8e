/**
 * The Gemini API wire format (`generateContent`, `streamGenerateContent?alt=sse`), as far as
 * the gateway reads or writes it. Responses are loosely typed: proto3 JSON omits fields at
 * their default value (0, false, ""), so every response field is optional.
 * @see https://ai.google.dev/api/generate-content
 * @see https://ai.google.dev/api/caching#Content
 */

/** `inlineData`: base64 bytes with their MIME type. */
export interface GeminiBlob {
  mimeType: string;
  /** Base64 (standard alphabet, padded). */
  data: string;
}

/** One streamed argument value of a function call (`partialArgs[]`). */
export interface GeminiPartialArg {
  /** RFC 9535 JSON path of the argument, e.g. `$.recipe.steps[0]`. */
  jsonPath?: string;
  stringValue?: string;
  numberValue?: number;
  boolValue?: boolean;
  nullValue?: 'NULL_VALUE' | string;
  /** More pieces of the same path follow (strings are concatenated). */
  willContinue?: boolean;
}

/** A function call: whole (`name` + `args`), or streamed (`willContinue` / `partialArgs`). */
export interface GeminiFunctionCall {
  id?: string;
  name?: string;
  args?: Record<string, unknown> | null;
  partialArgs?: GeminiPartialArg[];
  /** More parts of this call follow; a part without it ends the call. */
  willContinue?: boolean;
}

export interface GeminiFunctionResponse {
  id?: string;
  name: string;
  /** Must be a JSON object. */
  response: Record<string, unknown>;
}

/** One part of a content; exactly one data field, plus the `thought` / `thoughtSignature` metadata. */
export interface GeminiPart {
  text?: string;
  inlineData?: GeminiBlob;
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  executableCode?: unknown;
  codeExecutionResult?: unknown;
  /** The text is a thought summary (reasoning), not answer text. */
  thought?: boolean;
  /** Opaque signature of the model's reasoning; must be sent back on the same part next turn. */
  thoughtSignature?: string;
}

export interface GeminiContent {
  role?: 'user' | 'model' | string;
  parts?: GeminiPart[];
}

/** An OpenAPI-3.0-subset schema (function parameters). */
export type GeminiSchema = Record<string, unknown>;

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: GeminiSchema;
}

export type GeminiFunctionCallingMode = 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED';

export interface GeminiThinkingConfig {
  includeThoughts?: boolean;
  /** Tokens; 0 turns thinking off, -1 lets the model decide (Gemini 2.5). */
  thinkingBudget?: number;
  /** Gemini 3 and later. */
  thinkingLevel?: 'MINIMAL' | 'LOW' | 'MEDIUM' | 'HIGH';
}

export interface GeminiGenerationConfig {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
  seed?: number;
  responseMimeType?: string;
  responseJsonSchema?: Record<string, unknown>;
  thinkingConfig?: GeminiThinkingConfig;
}

/** `GenerateContentRequest`, minus `model` (it is in the URL). */
export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: GeminiFunctionCallingMode; allowedFunctionNames?: string[] } };
  generationConfig?: GeminiGenerationConfig;
}

/** Token counts; proto3 JSON leaves out zero counts. */
export interface GeminiUsageMetadata {
  /** Whole prompt, cached content included. */
  promptTokenCount?: number;
  /** Part of the prompt read from a cache. */
  cachedContentTokenCount?: number;
  /** Visible output; thoughts excluded. */
  candidatesTokenCount?: number;
  /** Prompt of tool-use turns (e.g. code execution, search). */
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
  [key: string]: unknown;
}

export interface GeminiCandidate {
  content?: GeminiContent;
  finishReason?: string;
  finishMessage?: string;
  index?: number;
}

export interface GeminiErrorWire {
  code?: number;
  message?: string;
  status?: string;
  details?: Array<Record<string, unknown>>;
}

/** `GenerateContentResponse`; also each event of a stream. */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
  /** An error inside a 200 response or stream. */
  error?: GeminiErrorWire;
}

/**
 * One `EmbedContentRequest` of a `batchEmbedContents` call: the model's resource name (it must
 * be the model of the URL), the text as one content part, and the shortened vector length.
 * @see https://ai.google.dev/api/embeddings#EmbedContentRequest
 */
export interface GeminiEmbedContentRequest {
  /** `models/<model>`. */
  model: string;
  content: { parts: Array<{ text: string }> };
  /** Output vector length (models that can shorten their vectors). */
  outputDimensionality?: number;
}

/** `BatchEmbedContentsRequest` body (`POST …/models/<model>:batchEmbedContents`). */
export interface GeminiBatchEmbedRequest {
  requests: GeminiEmbedContentRequest[];
}

/**
 * `BatchEmbedContentsResponse`: one `ContentEmbedding` per request, in request order. It
 * carries no token counts.
 * @see https://ai.google.dev/api/embeddings#response-body_1
 */
export interface GeminiBatchEmbedResponse {
  embeddings?: Array<{ values?: number[] }>;
}
