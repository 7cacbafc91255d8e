/**
 * Inside the engine process: OpenAI-format embeddings requests (`POST /v1/embeddings`, as the
 * gateway's OpenAI adapter sends them) turned into node-llama-cpp embeddings. Only type imports
 * of node-llama-cpp here; the library itself is loaded by engine-worker.ts.
 *
 * The embedding context (a llama.cpp context of its own, in embeddings mode) is created on the
 * first embeddings request, so an engine that only chats never pays for it. It evaluates one
 * input at a time; requests wait for it in a bounded FIFO like generations do for a sequence.
 * Usage is the engine's own count: the tokens each input was evaluated as (the model's
 * tokenizer, plus the begin/end tokens the model adds), summed.
 */
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp';
import { encodeEmbeddingBase64 } from '../../core/embedding-types.js';
import { RequestError } from './engine-generate.js';
import { SlotPool } from './engine-slots.js';

/** What the embeddings route needs from the engine. */
export interface EmbedderOptions {
  model: LlamaModel;
  /** Tokens in the model's vocabulary (bounds token-id inputs). */
  vocabularySize: number;
  /** Context window of the embedding context, in tokens (bounds each input). */
  contextSize: number;
  /** CPU threads of an evaluation. */
  threads: number;
  /** Requests waiting for the embedding context; one more is refused with a 503. */
  maxQueue: number;
}

/** The OpenAI embeddings response the engine sends. */
export interface EngineEmbeddingResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Embeds texts or token-id arrays with the loaded model; see the file comment. */
export interface Embedder {
  /**
   * Validate and run one embeddings request body.
   * @returns null when `signal` aborted it (the client went away).
   * @throws RequestError (400, `param` set) for a bad body, an input longer than the context
   *   (`context_length_exceeded`) or `dimensions` other than the model's vector length.
   * @throws QueueFullError when the queue is full.
   */
  embed(body: Record<string, unknown>, signal: AbortSignal): Promise<EngineEmbeddingResponse | null>;
}

type Input = string | Token[];

/** `input` as a list of texts or token-id arrays, validated. */
function readInputs(body: Record<string, unknown>, vocabularySize: number): Input[] {
  const input = body.input;
  const list: unknown[] = typeof input === 'string' ? [input] : Array.isArray(input) && input.length > 0 && typeof input[0] === 'number' ? [input] : Array.isArray(input) ? input : [];
  if (list.length === 0) throw new RequestError('input: must be a non-empty string, array of strings, or token-id arrays', 'input');
  return list.map((item, i) => {
    if (typeof item === 'string') {
      if (item === '') throw new RequestError(`input[${i}]: must not be empty`, 'input');
      return item;
    }
    if (!Array.isArray(item) || item.length === 0) throw new RequestError(`input[${i}]: must be a non-empty string or array of token ids`, 'input');
    for (const id of item) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= vocabularySize) {
        throw new RequestError(`input[${i}]: token ids must be whole numbers from 0 to ${vocabularySize - 1} (the model's vocabulary)`, 'input');
      }
    }
    return item as Token[];
  });
}

/**
 * The engine's embedder. Nothing is allocated until the first {@link Embedder.embed} call; a
 * failed context creation is retried by the next request.
 * @see https://node-llama-cpp.withcat.ai/guide/embedding
 */
export function createEmbedder({ model, vocabularySize, contextSize, threads, maxQueue }: EmbedderOptions): Embedder {
  let context: Promise<LlamaEmbeddingContext> | null = null;
  const lane = new SlotPool<'context'>(['context'], maxQueue);
  const contextNow = (): Promise<LlamaEmbeddingContext> => {
    context ??= model.createEmbeddingContext({ contextSize, threads }).catch((err: unknown) => {
      context = null;
      throw err;
    });
    return context;
  };

  return {
    async embed(body, signal) {
      const inputs = readInputs(body, vocabularySize);
      const format = body.encoding_format ?? 'float';
      if (format !== 'float' && format !== 'base64') throw new RequestError('encoding_format: must be "float" or "base64"', 'encoding_format');
      const size = model.embeddingVectorSize;
      if (body.dimensions !== undefined && body.dimensions !== null && body.dimensions !== size) {
        throw new RequestError(`dimensions: this model's vectors have ${size} numbers and cannot be shortened; leave dimensions out or send ${size}`, 'dimensions');
      }
      let slot: 'context';
      try {
        slot = await lane.acquire(signal);
      } catch (err) {
        if (signal.aborted) return null;
        throw err;
      }
      try {
        const ctx = await contextNow();
        const data: EngineEmbeddingResponse['data'] = [];
        let tokens = 0;
        for (let i = 0; i < inputs.length; i++) {
          if (signal.aborted) return null;
          const length = ctx.calculateInputLength(inputs[i]!);
          if (length >= contextSize) {
            throw new RequestError(
              `input[${i}] is ${length} tokens; this model's embedding context holds ${contextSize - 1} tokens per input. Shorten the input.`,
              'input',
              400,
              'context_length_exceeded',
            );
          }
          const { vector } = await ctx.getEmbeddingFor(inputs[i]!);
          tokens += length;
          data.push({ object: 'embedding', index: i, embedding: format === 'base64' ? encodeEmbeddingBase64(vector) : [...vector] });
        }
        return { object: 'list', data, model: typeof body.model === 'string' ? body.model : 'local', usage: { prompt_tokens: tokens, total_tokens: tokens } };
      } finally {
        lane.release(slot);
      }
    },
  };
}
