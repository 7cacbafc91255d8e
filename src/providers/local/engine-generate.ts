/**
 * Inside the engine process: OpenAI-format requests (as the gateway's OpenAI adapter sends
 * them) turned into node-llama-cpp generations. Only type imports of node-llama-cpp here; the
 * library itself is loaded by engine-worker.ts.
 *
 * Chat goes through `LlamaChat` with the model's chat template (node-llama-cpp's chat wrapper
 * for it), text completions through `LlamaCompletion` on the raw prompt. Usage is the engine's
 * own count: prompt tokens are the rendered prompt tokenized by the model's tokenizer, completion
 * tokens the tokens sampled for this request (the sequence's token meter).
 */
import { randomBytes } from 'node:crypto';
import type {
  ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, ChatWrapper, GbnfJsonSchema, LlamaChat, LlamaChatResponseChunk,
  LlamaChatResponseFunctionCallParamsChunk, LlamaCompletion, LlamaContextSequence, LlamaGrammar, LlamaModel, Llama, Token, TokenBias,
} from 'node-llama-cpp';

import { prepareJsonSchema, replaceNumberRules, SchemaBoundsError } from './json-schema-grammar.js';

export type NodeLlamaCpp = typeof import('node-llama-cpp');

/** A request the engine refuses: sent back as an OpenAI error with this status. */
export class RequestError extends Error {
  constructor(message: string, readonly param: string | null = null, readonly status = 400, readonly code: string | null = null) {
    super(message);
    this.name = 'RequestError';
  }
}

/** The loaded model and what every request shares. */
export interface Engine {
  lib: NodeLlamaCpp;
  llama: Llama;
  model: LlamaModel;
  /** Tokens each sequence holds. */
  contextSize: number;
  /** Tokens in the model's vocabulary (bounds `logit_bias` ids). */
  vocabularySize: number;
  chatWrapper: ChatWrapper;
  /** Grammars by JSON schema text (creating one parses the schema). */
  grammars: Map<string, Promise<LlamaGrammar>>;
}

/** One parallel sequence and the evaluators bound to it. */
export interface Slot {
  sequence: LlamaContextSequence;
  chat: LlamaChat;
  /** Chat under a grammar (`response_format`): the template's stop triggers off, see {@link grammarChatWrapper}. */
  grammarChat: LlamaChat;
  completion: LlamaCompletion;
}

/**
 * The model's chat wrapper with the chat template's own stop triggers removed, for generations
 * under a grammar (`response_format` json_object / json_schema).
 *
 * A template's end-of-turn trigger can be plain text that the grammar allows inside the JSON
 * (a template that ends turns with `"\n"` stops `{` followed by a newline: the answer was `{`
 * with finish_reason "stop"). Under a grammar the output must end only where the grammar
 * allows, and it already does without these triggers: the grammar lets an end-of-generation
 * token through only once the JSON is complete, and node-llama-cpp's JSON grammars carry their
 * own end trigger (text only reachable after the closing brace). The request's `stop` strings
 * still apply (the client asked for them). Same prompt rendering: every other member is the
 * wrapped one's (prototype delegation).
 * @see https://node-llama-cpp.withcat.ai/guide/grammar
 */
export function grammarChatWrapper(wrapper: ChatWrapper): ChatWrapper {
  const generateContextState: ChatWrapper['generateContextState'] = (options) => ({ ...wrapper.generateContextState(options), stopGenerationTriggers: [] });
  return Object.create(wrapper, { generateContextState: { value: generateContextState } }) as ChatWrapper;
}

/** Receives the generation as it happens (streaming). */
export interface GenerationSink {
  text(text: string): void;
  reasoning(text: string): void;
  toolCallStart(index: number, id: string, name: string): void;
  toolCallArguments(index: number, delta: string): void;
}

export interface ToolCallOut {
  id: string;
  name: string;
  arguments: string;
}

/** OpenAI-format usage, from the engine's counts. */
export interface EngineUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

export interface GenerationOutcome {
  text: string;
  reasoning: string;
  toolCalls: ToolCallOut[];
  finishReason: 'stop' | 'length' | 'tool_calls';
  /** The native stop reason (node-llama-cpp's). */
  stopReason: string;
  usage: EngineUsage;
  /** The client went away; the generation stopped early. */
  aborted: boolean;
}

/** A validated request, ready to run on a slot. */
export interface PreparedGeneration {
  promptTokens: number;
  run(slot: Slot, sink: GenerationSink | null, signal: AbortSignal): Promise<GenerationOutcome>;
}

type Body = Record<string, unknown>;

const MAX_GRAMMARS = 64;

/** `createGrammarForJsonSchema` without its compile-time schema typing (schemas arrive as JSON). */
interface JsonSchemaGrammars {
  createGrammarForJsonSchema(schema: unknown): Promise<LlamaGrammar>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function optionalNumber(body: Body, field: string, min: number, max: number): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new RequestError(`${field}: must be a number from ${min} to ${max}`, field);
  return v;
}

function optionalInt(body: Body, field: string, min: number, max: number): number | undefined {
  const v = optionalNumber(body, field, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw new RequestError(`${field}: must be a whole number`, field);
  return v;
}

/** Sampling and stopping options shared by chat and completions. */
interface Sampling {
  temperature: number;
  topP?: number;
  topK: number;
  minP?: number;
  seed?: number;
  repeatPenalty: false | { penalty?: number; frequencyPenalty?: number; presencePenalty?: number };
  tokenBias?: TokenBias;
  customStopTriggers?: string[];
}

function readSampling(engine: Engine, body: Body): Sampling {
  const n = optionalInt(body, 'n', 1, 128);
  if (n !== undefined && n !== 1) throw new RequestError('n: the local engine generates one choice per request', 'n');
  const temperature = optionalNumber(body, 'temperature', 0, 2) ?? 1; // OpenAI's default
  const topP = optionalNumber(body, 'top_p', 0, 1);
  const topK = optionalInt(body, 'top_k', 0, 1_000_000) ?? 0; // 0 = whole vocabulary, as OpenAI
  const minP = optionalNumber(body, 'min_p', 0, 1);
  const seedRaw = optionalInt(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  const seed = seedRaw === undefined ? undefined : ((seedRaw % 2 ** 32) + 2 ** 32) % 2 ** 32;
  const frequencyPenalty = optionalNumber(body, 'frequency_penalty', -2, 2);
  const presencePenalty = optionalNumber(body, 'presence_penalty', -2, 2);
  const repetitionPenalty = optionalNumber(body, 'repetition_penalty', 0, 2);
  const penalised = [frequencyPenalty, presencePenalty, repetitionPenalty].some((v) => v !== undefined && v !== 0);
  const repeatPenalty: Sampling['repeatPenalty'] = penalised
    ? { penalty: repetitionPenalty ?? 1, frequencyPenalty: frequencyPenalty ?? 0, presencePenalty: presencePenalty ?? 0 }
    : false;

  let tokenBias: TokenBias | undefined;
  const bias = body.logit_bias;
  if (bias !== undefined && bias !== null) {
    if (!isRecord(bias)) throw new RequestError('logit_bias: must be an object of token id → bias', 'logit_bias');
    const vocab = engine.vocabularySize;
    tokenBias = new engine.lib.TokenBias(engine.model.tokenizer);
    for (const [id, value] of Object.entries(bias)) {
      const token = Number(id);
      if (!/^\d+$/.test(id) || token >= vocab) throw new RequestError(`logit_bias: ${JSON.stringify(id)} is not a token id of this model`, 'logit_bias');
      if (typeof value !== 'number' || !Number.isFinite(value) || value < -100 || value > 100) throw new RequestError(`logit_bias.${id}: must be a number from -100 to 100`, 'logit_bias');
      tokenBias.set(token as Token, value <= -100 ? 'never' : { logit: value });
    }
  }

  let customStopTriggers: string[] | undefined;
  const stop = body.stop;
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === 'string' ? [stop] : stop;
    if (!Array.isArray(list) || list.some((s) => typeof s !== 'string')) throw new RequestError('stop: must be a string or an array of strings', 'stop');
    customStopTriggers = (list as string[]).filter((s) => s !== '');
    if (customStopTriggers.length === 0) customStopTriggers = undefined;
  }
  return { temperature, topP, topK, minP, seed, repeatPenalty, tokenBias, customStopTriggers };
}

/** Requested output limit: `max_completion_tokens`, else `max_tokens` (the larger when both). */
function requestedMaxTokens(body: Body): number | undefined {
  const a = optionalInt(body, 'max_completion_tokens', 1, Number.MAX_SAFE_INTEGER);
  const b = optionalInt(body, 'max_tokens', 1, Number.MAX_SAFE_INTEGER);
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.max(a, b);
}

/**
 * The output limit that fits the context: the request's, refused when prompt + limit exceed
 * the sequence's window (as OpenAI-compatible servers do), else the rest of the window.
 */
function fitOutputLimit(engine: Engine, promptTokens: number, requested: number | undefined, param: 'messages' | 'prompt'): number {
  const ctx = engine.contextSize;
  const room = ctx - promptTokens - 1;
  if (room < 1 || (requested !== undefined && promptTokens + requested > ctx)) {
    const total = promptTokens + (requested ?? 1);
    throw new RequestError(
      `This model's maximum context length is ${ctx} tokens. However, you requested ${total} tokens (${promptTokens} in the ${param}, ${requested ?? 1} in the completion). Please reduce the length of the messages or completion.`,
      param,
      400,
      'context_length_exceeded',
    );
  }
  return Math.min(requested ?? room, room);
}

function contentText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new RequestError(`${param}: must be a string or an array of content parts`, param);
  return content
    .map((part, i) => {
      if (!isRecord(part)) throw new RequestError(`${param}[${i}]: must be a content part object`, `${param}[${i}]`);
      if (part.type === 'text' && typeof part.text === 'string') return part.text;
      if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
      throw new RequestError(`${param}[${i}]: the local engine reads text only (got a "${String(part.type)}" part)`, `${param}[${i}]`);
    })
    .join('');
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** OpenAI messages → node-llama-cpp chat history (tool results joined to their calls). */
export function toChatHistory(messages: unknown): ChatHistoryItem[] {
  if (!Array.isArray(messages) || messages.length === 0) throw new RequestError('messages: must be a non-empty array', 'messages');
  const history: ChatHistoryItem[] = [];
  const callsById = new Map<string, ChatModelFunctionCall>();
  messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!isRecord(m)) throw new RequestError(`${at}: must be an object`, at);
    switch (m.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text: contentText(m.content, `${at}.content`) });
        return;
      case 'user':
        history.push({ type: 'user', text: contentText(m.content, `${at}.content`) });
        return;
      case 'assistant': {
        const response: Array<string | ChatModelFunctionCall> = [];
        const text = contentText(m.content, `${at}.content`);
        if (text !== '') response.push(text);
        if (Array.isArray(m.tool_calls)) {
          m.tool_calls.forEach((tc, j) => {
            const fn = isRecord(tc) && isRecord(tc.function) ? tc.function : null;
            if (!fn || typeof fn.name !== 'string') throw new RequestError(`${at}.tool_calls[${j}]: must have function.name`, `${at}.tool_calls[${j}]`);
            const call: ChatModelFunctionCall = { type: 'functionCall', name: fn.name, params: parseArguments(typeof fn.arguments === 'string' ? fn.arguments : '{}'), result: '' };
            if (isRecord(tc) && typeof tc.id === 'string') callsById.set(tc.id, call);
            response.push(call);
          });
        }
        history.push({ type: 'model', response });
        return;
      }
      case 'tool': {
        const call = typeof m.tool_call_id === 'string' ? callsById.get(m.tool_call_id) : undefined;
        if (!call) throw new RequestError(`${at}.tool_call_id: no earlier assistant tool call has this id`, `${at}.tool_call_id`);
        call.result = parseArguments(contentText(m.content, `${at}.content`));
        return;
      }
      default:
        throw new RequestError(`${at}.role: unknown role ${JSON.stringify(m.role)}`, `${at}.role`);
    }
  });
  return history;
}

/**
 * Grammar for a JSON schema, with JSON Schema's integer and number rules
 * ({@link prepareJsonSchema}): node-llama-cpp converts the rest, our rules replace its
 * placeholders. Same options (stop trigger, whitespace trim) as node-llama-cpp's own.
 */
async function jsonSchemaGrammar(llama: Llama, schema: Record<string, unknown>): Promise<LlamaGrammar> {
  const prepared = prepareJsonSchema(schema, randomBytes(6).toString('hex'));
  const base = await (llama as unknown as JsonSchemaGrammars).createGrammarForJsonSchema(prepared.schema);
  if (prepared.numbers.size === 0 && !/^(integer|fractional)-number-rule ::= /m.test(base.grammar)) return base;
  return llama.createGrammar({ grammar: replaceNumberRules(base.grammar, prepared.numbers), stopGenerationTriggers: base.stopGenerationTriggers, trimWhitespaceSuffix: base.trimWhitespaceSuffix });
}

/** Grammar for a JSON schema (cached), or for any JSON when `schema` is null. */
async function grammarFor(engine: Engine, schema: Record<string, unknown> | null, param: string): Promise<LlamaGrammar> {
  const key = schema === null ? 'json' : JSON.stringify(schema);
  let grammar = engine.grammars.get(key);
  if (!grammar) {
    grammar = schema === null ? engine.llama.getGrammarFor('json') : jsonSchemaGrammar(engine.llama, schema);
    if (engine.grammars.size >= MAX_GRAMMARS) engine.grammars.delete(engine.grammars.keys().next().value as string);
    engine.grammars.set(key, grammar);
  }
  try {
    return await grammar;
  } catch (err) {
    engine.grammars.delete(key);
    if (err instanceof SchemaBoundsError) throw new RequestError(`${param}${err.path}: ${err.reason}`, `${param}${err.path}`);
    throw new RequestError(`${param}: the local engine cannot turn this JSON schema into a grammar: ${(err as Error).message}`, param);
  }
}

async function readResponseFormat(engine: Engine, body: Body): Promise<LlamaGrammar | undefined> {
  const rf = body.response_format;
  if (rf === undefined || rf === null) return undefined;
  if (!isRecord(rf)) throw new RequestError('response_format: must be an object', 'response_format');
  if (rf.type === 'text') return undefined;
  if (rf.type === 'json_object') return grammarFor(engine, null, 'response_format');
  if (rf.type === 'json_schema') {
    const js = rf.json_schema;
    if (!isRecord(js) || !isRecord(js.schema)) throw new RequestError('response_format.json_schema.schema: required', 'response_format.json_schema.schema');
    return grammarFor(engine, js.schema, 'response_format.json_schema.schema');
  }
  throw new RequestError(`response_format.type: ${JSON.stringify(rf.type)} is not supported`, 'response_format.type');
}

async function readTools(engine: Engine, body: Body): Promise<ChatModelFunctions | undefined> {
  const tools = body.tools;
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) throw new RequestError('tools: must be an array', 'tools');
  const choice = body.tool_choice;
  if (choice === 'none' || tools.length === 0) return undefined;
  const only = isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string' ? choice.function.name : null;
  const functions: Record<string, { description?: string; params?: GbnfJsonSchema }> = {};
  for (const [i, tool] of tools.entries()) {
    const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : null;
    if (!fn || typeof fn.name !== 'string') throw new RequestError(`tools[${i}].function.name: required`, `tools[${i}].function.name`);
    if (only !== null && fn.name !== only) continue;
    const params = isRecord(fn.parameters) ? fn.parameters : undefined;
    // Refuse a schema the engine cannot generate arguments for now, not mid-generation.
    if (params) await grammarFor(engine, params, `tools[${i}].function.parameters`);
    functions[fn.name] = {
      ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
      ...(params ? { params: params as GbnfJsonSchema } : {}),
    };
  }
  if (Object.keys(functions).length === 0) throw new RequestError(`tool_choice: no tool named ${JSON.stringify(only)}`, 'tool_choice');
  return functions;
}

function usageOf(promptTokens: number, completionTokens: number, cachedTokens: number, reasoningTokens: number): EngineUsage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
    completion_tokens_details: { reasoning_tokens: reasoningTokens },
  };
}

function finishReasonOf(stopReason: string): GenerationOutcome['finishReason'] {
  if (stopReason === 'maxTokens') return 'length';
  if (stopReason === 'functionCalls') return 'tool_calls';
  return 'stop';
}

const newCallId = () => `call_${randomBytes(12).toString('base64url')}`;

/** How many prompt tokens the sequence already holds (reused, not evaluated again). */
function cachedPrefix(sequence: LlamaContextSequence, prompt: Token[]): number {
  if (prompt.length === 0) return 0;
  const { firstDifferentIndex } = sequence.compareContextTokens(prompt);
  return Math.max(0, Math.min(firstDifferentIndex, prompt.length - 1));
}

const outputTokens = (sequence: LlamaContextSequence) => sequence.tokenMeter.getState().usedOutputTokens;

function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (err instanceof Error && err.name === 'AbortError');
}

/** Validate a chat completion request and render its prompt. */
export async function prepareChat(engine: Engine, body: Body): Promise<PreparedGeneration> {
  const history = toChatHistory(body.messages);
  history.push({ type: 'model', response: [] });
  const sampling = readSampling(engine, body);
  const grammar = await readResponseFormat(engine, body);
  const functions = await readTools(engine, body);
  if (grammar && functions) throw new RequestError('response_format: the local engine cannot combine a JSON response format with tools', 'response_format');
  const state = engine.chatWrapper.generateContextState({ chatHistory: history, availableFunctions: functions, documentFunctionParams: true });
  const prompt = state.contextText.tokenize(engine.model.tokenizer);
  const maxTokens = fitOutputLimit(engine, prompt.length, requestedMaxTokens(body), 'messages');
  const maxParallelFunctionCalls = body.parallel_tool_calls === false ? 1 : undefined;

  return {
    promptTokens: prompt.length,
    async run(slot, sink, signal) {
      const cached = cachedPrefix(slot.sequence, prompt);
      const before = outputTokens(slot.sequence);
      let text = '';
      let reasoning = '';
      let reasoningTokens = 0;
      const streamedCalls = new Map<number, ToolCallOut>();
      const onResponseChunk = (chunk: LlamaChatResponseChunk) => {
        if (chunk.type === 'segment') {
          reasoningTokens += chunk.tokens.length;
          if (chunk.text === '') return;
          reasoning += chunk.text;
          sink?.reasoning(chunk.text);
        } else if (chunk.text !== '') {
          text += chunk.text;
          sink?.text(chunk.text);
        }
      };
      const onFunctionCallParamsChunk = (chunk: LlamaChatResponseFunctionCallParamsChunk) => {
        let call = streamedCalls.get(chunk.callIndex);
        if (!call) {
          call = { id: newCallId(), name: chunk.functionName, arguments: '' };
          streamedCalls.set(chunk.callIndex, call);
          sink?.toolCallStart(chunk.callIndex, call.id, call.name);
        }
        if (chunk.paramsChunk !== '') {
          call.arguments += chunk.paramsChunk;
          sink?.toolCallArguments(chunk.callIndex, chunk.paramsChunk);
        }
      };
      const common = {
        maxTokens,
        temperature: sampling.temperature,
        topP: sampling.topP,
        topK: sampling.topK,
        minP: sampling.minP,
        seed: sampling.seed,
        repeatPenalty: sampling.repeatPenalty,
        tokenBias: sampling.tokenBias,
        customStopTriggers: sampling.customStopTriggers,
        signal,
        stopOnAbortSignal: true,
        onResponseChunk,
      };
      let stopReason: string;
      let toolCalls: ToolCallOut[] = [];
      try {
        if (functions) {
          const res = await slot.chat.generateResponse(history, { ...common, functions, documentFunctionParams: true, maxParallelFunctionCalls, onFunctionCallParamsChunk });
          stopReason = res.metadata.stopReason;
          toolCalls = (res.functionCalls ?? []).map((fc, i) => {
            const streamed = streamedCalls.get(i);
            if (streamed) return streamed;
            const call = { id: newCallId(), name: fc.functionName, arguments: JSON.stringify(fc.params ?? {}) };
            sink?.toolCallStart(i, call.id, call.name);
            sink?.toolCallArguments(i, call.arguments);
            return call;
          });
        } else {
          const res = await (grammar ? slot.grammarChat : slot.chat).generateResponse(history, { ...common, grammar });
          stopReason = res.metadata.stopReason;
        }
      } catch (err) {
        if (!isAbort(err, signal)) throw err;
        stopReason = 'abort';
      }
      const completion = outputTokens(slot.sequence) - before;
      return {
        text,
        reasoning,
        toolCalls,
        finishReason: toolCalls.length > 0 ? 'tool_calls' : finishReasonOf(stopReason),
        stopReason,
        usage: usageOf(prompt.length, completion, cached, reasoningTokens),
        aborted: stopReason === 'abort' || signal.aborted,
      };
    },
  };
}

/** The text without a trailing unfinished character (the replacement character detokenizing leaves for it). */
function wholeCharacters(text: string): string {
  return text.endsWith('\uFFFD') ? text.slice(0, -1) : text;
}

/** Whether the model's tokenizer puts a BOS token before a raw prompt (as LlamaCompletion does). */
function prependsBos(engine: Engine): boolean {
  const { model, lib } = engine;
  const type = model.vocabularyType;
  if (type === lib.LlamaVocabularyType.rwkv || type === lib.LlamaVocabularyType.ugm) return false;
  if (type === lib.LlamaVocabularyType.wpm) return model.tokens.bos !== null;
  return model.tokens.shouldPrependBosToken && model.tokens.bos !== null;
}

/** Validate a legacy completion request and tokenize its prompt. */
export function prepareCompletion(engine: Engine, body: Body): PreparedGeneration {
  let prompt = body.prompt;
  if (Array.isArray(prompt)) {
    if (prompt.length !== 1) throw new RequestError('prompt: the local engine takes one prompt per request', 'prompt');
    prompt = prompt[0];
  }
  if (typeof prompt !== 'string') throw new RequestError('prompt: must be a string', 'prompt');
  for (const field of ['suffix', 'echo', 'best_of', 'logprobs'] as const) {
    const v = body[field];
    if (v !== undefined && v !== null && v !== false && !(field === 'best_of' && v === 1)) throw new RequestError(`${field}: not supported by the local engine`, field);
  }
  const sampling = readSampling(engine, body);
  const bos = prependsBos(engine);
  const input = engine.model.tokenize(prompt, false, bos ? 'trimLeadingSpace' : undefined);
  const promptCount = input.length + (bos ? 1 : 0);
  const maxTokens = fitOutputLimit(engine, promptCount, requestedMaxTokens(body), 'prompt');

  return {
    promptTokens: promptCount,
    async run(slot, sink, signal) {
      const bosToken = engine.model.tokens.bos;
      const cached = cachedPrefix(slot.sequence, bos && bosToken !== null ? [bosToken, ...input] : input);
      const before = outputTokens(slot.sequence);
      let text = '';
      let stopReason: string;
      // LlamaCompletion samples one token past maxTokens when token maxTokens is the first byte
      // of a character (it waits for the rest before checking the limit). Chat (LlamaChat)
      // stops at the limit and drops the unfinished character; so do we: the tokens it releases
      // are counted (onToken comes right before onTextChunk with the same tokens) and the text
      // past the limit is cut, and the count is capped at the limit below.
      const delivered: Token[] = [];
      let chunkTokens: Token[] = [];
      try {
        const res = await slot.completion.generateCompletionWithMeta(input, {
          maxTokens,
          temperature: sampling.temperature,
          topP: sampling.topP,
          topK: sampling.topK,
          minP: sampling.minP,
          seed: sampling.seed,
          repeatPenalty: sampling.repeatPenalty,
          tokenBias: sampling.tokenBias,
          customStopTriggers: sampling.customStopTriggers,
          disableContextShift: true,
          signal,
          stopOnAbortSignal: true,
          onToken: (tokens) => {
            chunkTokens = tokens;
          },
          onTextChunk: (chunk) => {
            const room = maxTokens - delivered.length;
            if (chunkTokens.length > room) chunk = wholeCharacters(engine.model.detokenize(chunkTokens.slice(0, Math.max(0, room)), false, delivered));
            delivered.push(...chunkTokens.slice(0, Math.max(0, room)));
            chunkTokens = [];
            if (chunk === '') return;
            text += chunk;
            sink?.text(chunk);
          },
        });
        stopReason = res.metadata.stopReason;
      } catch (err) {
        if (!isAbort(err, signal)) throw err;
        stopReason = 'abort';
      }
      const completion = Math.min(outputTokens(slot.sequence) - before, maxTokens);
      return {
        text,
        reasoning: '',
        toolCalls: [],
        finishReason: finishReasonOf(stopReason),
        stopReason,
        usage: usageOf(promptCount, completion, cached, 0),
        aborted: stopReason === 'abort' || signal.aborted,
      };
    },
  };
}
