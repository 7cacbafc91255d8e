import type { OpOptions, ProviderPreferences, Usage } from './chat-types.js';

/**
 * The internal embeddings request: what to embed and how, with the gateway fields. `input` is
 * always a list here (one string or token array per vector).
 * @see https://platform.openai.com/docs/api-reference/embeddings/create
 */
export interface EmbeddingRequest {
  model: string;
  /** Texts, or token-id arrays. */
  input: string[] | number[][];
  /** Output vector length, for models that can shorten theirs. */
  dimensions?: number;
  /** `float` (arrays of numbers) or `base64` (little-endian float32, base64-encoded). */
  encoding_format?: 'float' | 'base64';
  user?: string;
  models?: string[];
  provider?: ProviderPreferences;
  op?: OpOptions;
}

/** The vectors of an embeddings call, in input order, and the usage (null: not reported). */
export interface EmbeddingResult {
  /** One vector per input: numbers, or base64 text when `encoding_format` was `base64`. */
  embeddings: Array<number[] | string>;
  usage: Usage | null;
}

/**
 * A vector as OpenAI's `encoding_format: "base64"` sends it: the numbers as little-endian
 * float32, base64-encoded (standard alphabet, padded). Used when the upstream answered floats
 * (Gemini always does) and the client asked for base64.
 * @see https://platform.openai.com/docs/api-reference/embeddings/create#embeddings-create-encoding_format
 */
export function encodeEmbeddingBase64(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  for (let i = 0; i < vector.length; i++) bytes.writeFloatLE(vector[i]!, i * 4);
  return bytes.toString('base64');
}
