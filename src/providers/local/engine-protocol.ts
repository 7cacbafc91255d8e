/**
 * What the gateway (the supervisor) and an engine process say to each other. The engine's
 * settings travel in an environment variable at fork time; afterwards both sides exchange
 * these messages over the fork IPC channel. Requests themselves go over HTTP.
 */

/** Environment variable holding the JSON {@link EngineStartConfig} of a forked engine. */
export const ENGINE_CONFIG_ENV = 'OP_LOCAL_ENGINE_CONFIG';

/** Everything an engine process needs to start. */
export interface EngineStartConfig {
  /** Provider id, for log lines. */
  providerId: string;
  /** The endpoint's `upstream_model`: a file path, an `hf:` URI or an http(s) URL. */
  source: string;
  /** Where `hf:` and URL sources are downloaded to. */
  cacheDir: string;
  parallelSequences: number;
  maxQueue: number;
  contextSize: number;
  gpuLayers: number | 'auto' | 'max';
  /** 0 = the engine's default. */
  threads: number;
  /** Bearer token the engine's HTTP API requires (it listens on 127.0.0.1 only). */
  token: string;
}

/** What a ready engine reports about itself. */
export interface EngineInfo {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** The model file loaded (after an `hf:` download, the cached file). */
  modelPath: string;
  /** Context window of each sequence, in tokens. */
  contextSize: number;
  /** The context length the model was trained with. */
  trainContextSize: number;
  parallelSequences: number;
  /** The node-llama-cpp chat wrapper chosen for the model's chat template. */
  chatWrapper: string;
  /** Whether a GPU is used (false on CPU-only builds). */
  gpu: string | false;
  /** Model load time, in ms (download excluded). */
  loadMs: number;
}

/** Engine → supervisor. */
export type EngineMessage =
  | { type: 'download-progress'; downloadedBytes: number; totalBytes: number }
  | { type: 'ready'; info: EngineInfo }
  /**
   * The engine cannot start. `terminal`: starting again will fail the same way until the model
   * file (or the installation) changes — a missing or unloadable model file, node-llama-cpp
   * missing — so the supervisor does not restart it.
   */
  | { type: 'fatal'; message: string; terminal: boolean };

/** Supervisor → engine. */
export type SupervisorMessage = { type: 'shutdown' };
