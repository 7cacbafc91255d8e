import path from 'node:path';
import type { ProviderConfig } from '../../config/schema.js';
import { localEngineSchema, type LocalEngineConfig } from './local-config-schema.js';
import type { EngineStartConfig } from './engine-protocol.js';

/** Default download folder of `hf:` and URL model sources, relative to the working directory. */
export const DEFAULT_MODELS_DIR = path.join('data', 'models');

/** Whether a model source is a URI (`hf:…`, `https://…`) rather than a file path. */
export function isModelUri(source: string): boolean {
  // Two letters or more before the colon: `C:\models\x.gguf` stays a path.
  return /^[a-z][a-z0-9+.-]+:/i.test(source);
}

/** The provider's `local` settings with their defaults applied. */
export function localSettings(provider: ProviderConfig): LocalEngineConfig {
  return localEngineSchema.parse(provider.local ?? {});
}

/** Engine start settings for one endpoint of a `local` provider (paths made absolute). */
export function engineStartConfig(provider: ProviderConfig, source: string): { config: Omit<EngineStartConfig, 'token'>; loadWaitMs: number } {
  const s = localSettings(provider);
  return {
    config: {
      providerId: provider.id,
      source: isModelUri(source) ? source : path.resolve(source),
      cacheDir: path.resolve(s.cache_dir ?? DEFAULT_MODELS_DIR),
      parallelSequences: s.parallel_sequences,
      maxQueue: s.max_queue,
      contextSize: s.context_size,
      gpuLayers: s.gpu_layers,
      threads: s.threads,
    },
    loadWaitMs: s.load_wait_ms,
  };
}
