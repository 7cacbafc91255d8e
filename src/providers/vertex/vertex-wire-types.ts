/**
 * The Vertex AI wire format, as far as it differs from the kinds it reuses: Gemini models speak
 * the Gemini API's `GenerateContentRequest`/`Response` (gemini/gemini-wire-types.ts, with
 * `contents[].role` required), Claude models the Messages API (anthropic/anthropic-wire-types.ts)
 * without `model` and with `anthropic_version`. Here: the text-embedding `:predict` call and the
 * Google error envelope.
 * @see https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api
 */

/** Which Vertex publisher serves a provider's models: Gemini (`google`) or Claude (`anthropic`). */
export type VertexPublisher = 'google' | 'anthropic';

/** One input of `:predict` for a text-embedding model. */
export interface VertexEmbeddingInstance {
  content: string;
  task_type?: string;
  title?: string;
}

/** `POST …/publishers/google/models/{m}:predict` body for text-embedding models. */
export interface VertexPredictEmbeddingRequest {
  instances: VertexEmbeddingInstance[];
  parameters?: { autoTruncate?: boolean; outputDimensionality?: number };
}

/** One prediction of a text-embedding `:predict` answer. */
export interface VertexEmbeddingPrediction {
  embeddings?: {
    values?: unknown;
    /** `token_count`: the input's tokens; `truncated`: it was cut to the model's limit. */
    statistics?: { token_count?: number; truncated?: boolean };
  };
}

/** A text-embedding `:predict` answer. */
export interface VertexPredictEmbeddingResponse {
  predictions?: VertexEmbeddingPrediction[];
  metadata?: { billableCharacterCount?: number };
}

/** The Claude body's version field Vertex requires (`anthropic_version` in the body, not a header). */
export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16';
