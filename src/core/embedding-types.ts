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
