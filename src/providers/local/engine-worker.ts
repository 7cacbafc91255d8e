import { availableParallelism } from 'node:os';
/**
 * The engine process of a `local` provider endpoint, forked by engine-supervisor.ts. It is the
 * only place that loads node-llama-cpp: it resolves the model source (downloading an `hf:` URI
 * once into the cache folder, with node-llama-cpp's progress bar), loads the model, creates one
 * context with N parallel sequences (and an embedding context on the first embeddings request),
 * and serves the OpenAI-compatible API of engine-http.ts on
 * 127.0.0.1 (a free port). It exits when the gateway goes away (the IPC channel closes).
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEmbedder } from './engine-embed.js';
import { createEngineServer } from './engine-http.js';
import { grammarChatWrapper, type Engine, type NodeLlamaCpp, type Slot } from './engine-generate.js';
import { ENGINE_CONFIG_ENV, type EngineMessage, type EngineStartConfig, type SupervisorMessage } from './engine-protocol.js';
import { SlotPool } from './engine-slots.js';
import { isModelUri } from './local-settings.js';

const send = (msg: EngineMessage) => {
  if (process.connected) process.send?.(msg);
};

const log = (message: string) => process.stderr.write(`[opinference local engine ${process.pid}] ${message}\n`);

function readConfig(): EngineStartConfig {
  const raw = process.env[ENGINE_CONFIG_ENV];
  delete process.env[ENGINE_CONFIG_ENV]; // the token stays out of anything this process spawns
  if (!raw) throw new Error(`${ENGINE_CONFIG_ENV} is not set: this script is started by the gateway`);
  return JSON.parse(raw) as EngineStartConfig;
}

/** A start failure that another start would repeat (see the `fatal` message's `terminal`). */
class TerminalStartError extends Error {}

/** Run one start step; its failure is terminal (a retry cannot help) with `message`. */
async function terminalStep<T>(step: Promise<T>, message: (err: Error) => string): Promise<T> {
  try {
    return await step;
  } catch (err) {
    throw new TerminalStartError(message(err instanceof Error ? err : new Error(String(err))), { cause: err });
  }
}

function fail(err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  log(`fatal: ${err instanceof Error ? (err.stack ?? message) : message}`);
  send({ type: 'fatal', message, terminal: err instanceof TerminalStartError });
  process.exit(1);
}

async function main(): Promise<void> {
  // The gateway is gone: exit; in-flight generations die with the process.
  process.on('disconnect', () => process.exit(0));
  let server: Server | null = null;
  process.on('message', (msg: SupervisorMessage) => {
    if (msg?.type !== 'shutdown') return;
    if (!server) process.exit(0);
    // Finish what is in flight, take nothing new, then exit.
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
  const config = readConfig();

  const lib: NodeLlamaCpp = await terminalStep(
    import('node-llama-cpp'),
    (err) => `node-llama-cpp is not installed or cannot load (${err.message}); install the project's dependencies with npm ci`,
  );
  const llama = await terminalStep(lib.getLlama({
    // Prebuilt binaries only: never download or compile llama.cpp at run time (offline machines).
    build: 'never',
    gpu: config.gpuLayers === 0 ? false : 'auto',
    progressLogs: false,
    logLevel: lib.LlamaLogLevel.warn,
    logger: (level, message) => {
      const text = message.trim();
      if (text !== '') log(`llama.cpp ${level}: ${text}`);
    },
  }), (err) => `node-llama-cpp's prebuilt llama.cpp binary does not load on this machine: ${err.message}`);

  const resolving = lib.resolveModelFile(config.source, {
    directory: config.cacheDir,
    // node-llama-cpp's own progress bar on a terminal; progress messages to the gateway's log always.
    cli: process.stdout.isTTY === true,
    onProgress: ({ downloadedSize, totalSize }) => send({ type: 'download-progress', downloadedBytes: downloadedSize, totalBytes: totalSize }),
  });
  // A file path that is not there stays missing; a download (hf:, https:) may work next time.
  const modelPath = !isModelUri(config.source) ? await terminalStep(resolving, (err) => `model file not found: ${config.source} (${err.message})`) : await resolving;

  const loadStarted = performance.now();
  const model = await terminalStep(llama.loadModel({ modelPath, gpuLayers: config.gpuLayers }), (err) => `the model file ${modelPath} cannot be loaded: ${err.message}`);
  const trainContextSize = model.trainContextSize;
  const contextSize = trainContextSize > 0 ? Math.min(config.contextSize, trainContextSize) : config.contextSize;
  // 0 = leave one core to the gateway and the rest of the machine: llama.cpp's own default
  // (every core) spins badly when the cores are shared.
  const threads = config.threads > 0 ? config.threads : Math.max(1, availableParallelism() - 1);
  const context = await model.createContext({ sequences: config.parallelSequences, contextSize, threads });
  const chatWrapper = lib.resolveChatWrapper(model) ?? new lib.GeneralChatWrapper();
  const grammarWrapper = grammarChatWrapper(chatWrapper);
  const slots: Slot[] = [];
  for (let i = 0; i < config.parallelSequences; i++) {
    const sequence = context.getSequence();
    slots.push({
      sequence,
      chat: new lib.LlamaChat({ contextSequence: sequence, chatWrapper }),
      grammarChat: new lib.LlamaChat({ contextSequence: sequence, chatWrapper: grammarWrapper }),
      completion: new lib.LlamaCompletion({ contextSequence: sequence }),
    });
  }
  const metadata = model.fileInfo.metadata as unknown as { tokenizer?: { ggml?: { tokens?: readonly unknown[] } } } | undefined;
  const engine: Engine = {
    lib,
    llama,
    model,
    contextSize: slots[0]!.sequence.contextSize,
    vocabularySize: metadata?.tokenizer?.ggml?.tokens?.length ?? Number.POSITIVE_INFINITY,
    chatWrapper,
    grammars: new Map(),
  };
  const loadMs = Math.round(performance.now() - loadStarted);

  const pool = new SlotPool(slots, config.maxQueue);
  // The embedding context is created by the first embeddings request (chat-only engines never do).
  const embedder = createEmbedder({ model, vocabularySize: engine.vocabularySize, contextSize, threads, maxQueue: config.maxQueue });
  const http = createEngineServer({ engine, pool, embedder, token: config.token, log });
  http.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(0, '127.0.0.1', () => resolve());
  });
  server = http;
  const { port } = http.address() as AddressInfo;

  send({
    type: 'ready',
    info: {
      origin: `http://127.0.0.1:${port}`,
      modelPath,
      contextSize: engine.contextSize,
      trainContextSize,
      parallelSequences: config.parallelSequences,
      chatWrapper: chatWrapper.wrapperName,
      gpu: llama.gpu,
      loadMs,
    },
  });
}

main().catch(fail);
