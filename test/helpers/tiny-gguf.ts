/**
 * Writes a tiny random-weight llama model as a GGUF v3 file, for tests of the `local` provider:
 * real llama.cpp inference on a model of a few hundred kilobytes, generated at test time.
 *
 * GGUF v3 layout (little-endian): magic "GGUF", version 3, tensor count (u64), metadata count
 * (u64), the metadata key/value pairs, the tensor infos (name, dimensions, type, offset into the
 * data section), padding to `general.alignment` (32), then the tensor data, each tensor starting
 * at an aligned offset.
 *
 * The vocabulary is byte-fallback only: `<unk>`, `<s>`, `</s>` and the 256 `<0xNN>` byte tokens
 * (SentencePiece-style, `tokenizer.ggml.model = "llama"`), so any text tokenizes to its UTF-8
 * bytes. The weights are pseudo-random from a fixed seed, with two deliberate biases so tests
 * are predictable: hidden dimension 0 carries a constant that attention and FFN never write to,
 * and the output row of every token reads it — strongly negative for `<unk>`, `<s>` and `</s>`
 * (the model never ends a generation by itself: it runs to `max_tokens` unless a grammar forces
 * the end), positive for lowercase letters and the space piece (the gibberish is readable
 * lowercase words).
 */
import { writeFileSync } from 'node:fs';
import { seededRandom } from './seeded-random.js';

/** GGUF metadata value types. */
const enum GgufType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

/** ggml tensor type of float32 data. */
const GGML_TYPE_F32 = 0;

/** SentencePiece token types as llama.cpp reads them. */
const TOKEN_TYPE = { normal: 1, unknown: 2, control: 3, byte: 6 } as const;

const ALIGNMENT = 32;
/** Scale of the random token embeddings and output rows. */
const EMBD_SCALE = 0.5;
const OUTPUT_SCALE = 0.35;
/** Output weights on the constant feature: specials never win, letters and `▁` usually do. */
const SPECIAL_BIAS = -20;
const LETTER_BIAS = 3;

/** The default chat template: system/user/assistant turns with `### Role:` headers. */
export const TINY_CHAT_TEMPLATE =
  "{{ bos_token }}{% for message in messages %}" +
  "{% if message['role'] == 'system' %}{{ '### System:\\n' + message['content'] + '\\n\\n' }}" +
  "{% elif message['role'] == 'user' %}{{ '### User:\\n' + message['content'] + '\\n\\n' }}" +
  "{% else %}{{ '### Assistant:\\n' + message['content'] + eos_token + '\\n\\n' }}{% endif %}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '### Assistant:\\n' }}{% endif %}";

export interface TinyLlamaOptions {
  /** Embedding width; default 64. */
  embedding?: number;
  /** Transformer blocks; default 2. */
  layers?: number;
  /** Attention heads (and KV heads); default 4. */
  heads?: number;
  /** FFN hidden width; default 128. */
  feedForward?: number;
  /** Trained context length written in the metadata; default 512. */
  contextLength?: number;
  /** Seed of the weights; default 1. */
  seed?: number;
  /** `tokenizer.chat_template`; default {@link TINY_CHAT_TEMPLATE}. */
  chatTemplate?: string;
  /** `general.name`; default "tiny-llama". */
  name?: string;
}

/**
 * Byte-fallback vocabulary: ids 0–2 are `<unk>`, `<s>`, `</s>`; id 3 + b is the byte b; the
 * last id is the SentencePiece space piece `▁`.
 */
export const TINY_VOCAB_SIZE = 3 + 256 + 1;
/** The SentencePiece space piece, the last token of the tiny vocabulary. */
const SPACE_PIECE = '\u2581';
/** The token id of byte `b` in the tiny vocabulary. */
export const byteToken = (b: number): number => 3 + b;

/** Appends little-endian values to a growing list of buffers. */
class ByteWriter {
  private readonly parts: Buffer[] = [];
  length = 0;

  private push(buf: Buffer): void {
    this.parts.push(buf);
    this.length += buf.length;
  }

  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }

  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }

  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }

  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }

  bool(v: boolean): void {
    this.push(Buffer.from([v ? 1 : 0]));
  }

  /** GGUF string: u64 byte length, then UTF-8 bytes (no terminator). */
  str(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }

  raw(buf: Buffer): void {
    this.push(buf);
  }

  /** Zero bytes up to the next multiple of `alignment`. */
  pad(alignment: number): void {
    const rest = this.length % alignment;
    if (rest !== 0) this.push(Buffer.alloc(alignment - rest));
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

type MetaValue =
  | { type: GgufType.UINT32 | GgufType.INT32 | GgufType.FLOAT32; value: number }
  | { type: GgufType.BOOL; value: boolean }
  | { type: GgufType.STRING; value: string }
  | { type: GgufType.ARRAY; itemType: GgufType.STRING; value: string[] }
  | { type: GgufType.ARRAY; itemType: GgufType.FLOAT32 | GgufType.INT32; value: number[] };

function writeScalar(w: ByteWriter, type: GgufType, value: number | boolean | string): void {
  switch (type) {
    case GgufType.UINT32:
      return w.u32(value as number);
    case GgufType.INT32:
      return w.i32(value as number);
    case GgufType.FLOAT32:
      return w.f32(value as number);
    case GgufType.BOOL:
      return w.bool(value as boolean);
    case GgufType.STRING:
      return w.str(value as string);
    default:
      throw new Error(`tiny-gguf: no scalar writer for type ${type}`);
  }
}

function writeMeta(w: ByteWriter, key: string, meta: MetaValue): void {
  w.str(key);
  w.u32(meta.type);
  if (meta.type === GgufType.ARRAY) {
    w.u32(meta.itemType);
    w.u64(meta.value.length);
    for (const item of meta.value) writeScalar(w, meta.itemType, item);
  } else {
    writeScalar(w, meta.type, meta.value);
  }
}


interface Tensor {
  name: string;
  /** GGUF dimensions, fastest-varying first: `[ne0, ne1]` is ne1 rows of ne0 values. */
  dims: number[];
  data: Float32Array;
}

/**
 * Build the GGUF bytes of a tiny llama model (about 450 KB with the defaults).
 */
export function buildTinyLlamaGguf(options: TinyLlamaOptions = {}): Buffer {
  const nEmbd = options.embedding ?? 64;
  const nLayer = options.layers ?? 2;
  const nHead = options.heads ?? 4;
  const nFf = options.feedForward ?? 128;
  const nCtx = options.contextLength ?? 512;
  const nVocab = TINY_VOCAB_SIZE;
  const headDim = nEmbd / nHead;
  if (!Number.isInteger(headDim)) throw new Error('tiny-gguf: embedding must be a multiple of heads');
  const random = seededRandom(options.seed ?? 1);
  const uniform = (scale: number) => (random() * 2 - 1) * scale;

  /** A weight matrix of `rows` rows with `cols` values each (GGUF dims `[cols, rows]`). */
  const matrix = (name: string, cols: number, rows: number, scale: number, zeroRows: number[] = []): Tensor => {
    const data = new Float32Array(cols * rows);
    for (let i = 0; i < data.length; i++) data[i] = uniform(scale);
    for (const r of zeroRows) data.fill(0, r * cols, (r + 1) * cols);
    return { name, dims: [cols, rows], data };
  };
  const ones = (name: string, n: number): Tensor => ({ name, dims: [n], data: new Float32Array(n).fill(1) });

  const tensors: Tensor[] = [];
  // Token embeddings: row t is token t's vector; dimension 0 is the constant "bias" feature.
  const embd = matrix('token_embd.weight', nEmbd, nVocab, EMBD_SCALE);
  for (let t = 0; t < nVocab; t++) embd.data[t * nEmbd] = 1;
  tensors.push(embd);
  for (let l = 0; l < nLayer; l++) {
    const p = `blk.${l}.`;
    const s = 1 / Math.sqrt(nEmbd);
    tensors.push(ones(`${p}attn_norm.weight`, nEmbd));
    tensors.push(matrix(`${p}attn_q.weight`, nEmbd, nEmbd, s));
    tensors.push(matrix(`${p}attn_k.weight`, nEmbd, nEmbd, s));
    tensors.push(matrix(`${p}attn_v.weight`, nEmbd, nEmbd, s));
    // Output rows are output features: row 0 stays zero so dimension 0 keeps its constant.
    tensors.push(matrix(`${p}attn_output.weight`, nEmbd, nEmbd, s, [0]));
    tensors.push(ones(`${p}ffn_norm.weight`, nEmbd));
    tensors.push(matrix(`${p}ffn_gate.weight`, nEmbd, nFf, s));
    tensors.push(matrix(`${p}ffn_up.weight`, nEmbd, nFf, s));
    tensors.push(matrix(`${p}ffn_down.weight`, nFf, nEmbd, 1 / Math.sqrt(nFf), [0]));
  }
  tensors.push(ones('output_norm.weight', nEmbd));
  // Output: row t gives token t's logit; its dimension-0 weight reads the constant feature.
  const output = matrix('output.weight', nEmbd, nVocab, OUTPUT_SCALE);
  for (let t = 0; t < nVocab; t++) {
    const b = t - 3;
    let bias = 0;
    if (t < 3) bias = SPECIAL_BIAS;
    else if ((b >= 0x61 && b <= 0x7a) || t === nVocab - 1) bias = LETTER_BIAS;
    output.data[t * nEmbd] = bias;
  }
  tensors.push(output);

  const tokens = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TOKEN_TYPE.unknown, TOKEN_TYPE.control, TOKEN_TYPE.control];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TOKEN_TYPE.byte);
  }
  // SentencePiece writes a space as "▁": one normal token for it makes text round-trip.
  tokens.push(SPACE_PIECE);
  types.push(TOKEN_TYPE.normal);
  const scores = tokens.map(() => 0);

  const u32 = (value: number): MetaValue => ({ type: GgufType.UINT32, value });
  const f32 = (value: number): MetaValue => ({ type: GgufType.FLOAT32, value });
  const metadata: Array<[string, MetaValue]> = [
    ['general.architecture', { type: GgufType.STRING, value: 'llama' }],
    ['general.name', { type: GgufType.STRING, value: options.name ?? 'tiny-llama' }],
    ['general.alignment', u32(ALIGNMENT)],
    ['general.file_type', u32(0)],
    ['llama.context_length', u32(nCtx)],
    ['llama.embedding_length', u32(nEmbd)],
    ['llama.block_count', u32(nLayer)],
    ['llama.feed_forward_length', u32(nFf)],
    ['llama.attention.head_count', u32(nHead)],
    ['llama.attention.head_count_kv', u32(nHead)],
    ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['llama.rope.dimension_count', u32(headDim)],
    ['llama.rope.freq_base', f32(10000)],
    ['llama.vocab_size', u32(nVocab)],
    ['tokenizer.ggml.model', { type: GgufType.STRING, value: 'llama' }],
    ['tokenizer.ggml.tokens', { type: GgufType.ARRAY, itemType: GgufType.STRING, value: tokens }],
    ['tokenizer.ggml.scores', { type: GgufType.ARRAY, itemType: GgufType.FLOAT32, value: scores }],
    ['tokenizer.ggml.token_type', { type: GgufType.ARRAY, itemType: GgufType.INT32, value: types }],
    ['tokenizer.ggml.unknown_token_id', u32(0)],
    ['tokenizer.ggml.bos_token_id', u32(1)],
    ['tokenizer.ggml.eos_token_id', u32(2)],
    ['tokenizer.ggml.add_bos_token', { type: GgufType.BOOL, value: true }],
    ['tokenizer.ggml.add_eos_token', { type: GgufType.BOOL, value: false }],
    ['tokenizer.ggml.add_space_prefix', { type: GgufType.BOOL, value: false }],
    ['tokenizer.chat_template', { type: GgufType.STRING, value: options.chatTemplate ?? TINY_CHAT_TEMPLATE }],
  ];

  const w = new ByteWriter();
  w.raw(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) writeMeta(w, key, value);
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(GGML_TYPE_F32);
    w.u64(offset);
    offsets.push(offset);
    offset += Math.ceil(t.data.byteLength / ALIGNMENT) * ALIGNMENT;
  }
  w.pad(ALIGNMENT);
  const dataStart = w.length;
  tensors.forEach((t, i) => {
    if (w.length - dataStart !== offsets[i]) throw new Error(`tiny-gguf: misaligned tensor ${t.name}`);
    w.raw(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    w.pad(ALIGNMENT);
  });
  return w.toBuffer();
}

/** Write a tiny llama GGUF file to `path`; returns its size in bytes. */
export function writeTinyLlamaGguf(path: string, options: TinyLlamaOptions = {}): number {
  const bytes = buildTinyLlamaGguf(options);
  writeFileSync(path, bytes);
  return bytes.length;
}
