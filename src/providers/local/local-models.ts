import path from 'node:path';
import type { LoadedConfig } from '../../config/load.js';
import { parseConfig } from '../../config/load.js';
import type { GatewayConfig } from '../../config/schema.js';
import type { EngineInfo } from './engine-protocol.js';
import { engineFor, localEngineStatus, stopEnginesExcept } from './engine-supervisor.js';
import { engineStartConfig, isModelUri } from './local-settings.js';

/** Parameters a local engine honours (see engine-request.ts), listed on `OP_LOCAL_MODEL` endpoints. */
export const LOCAL_SUPPORTED_PARAMETERS = [
  'temperature', 'top_p', 'top_k', 'min_p', 'max_tokens', 'max_completion_tokens', 'stop', 'seed',
  'frequency_penalty', 'presence_penalty', 'repetition_penalty', 'logit_bias', 'response_format',
  'tools', 'tool_choice',
] as const;

/** Lowercase slug of a name: letters, digits, `.`, `_` and `-`. */
function slugify(name: string): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^[^a-z0-9]+/, '').replace(/-+$/, '');
  return slug || 'model';
}

/**
 * The catalog name of a model source: the file name without `.gguf` for paths and URLs; for
 * `hf:owner/repo:quant` the repository name (less a `-GGUF` suffix) and the quantization.
 */
export function localModelName(source: string): string {
  const withoutQuery = source.replace(/[?#].*$/, '');
  if (/\.gguf$/i.test(withoutQuery)) return slugify(path.basename(withoutQuery.replace(/^[a-z]+:/i, '')).replace(/\.gguf$/i, ''));
  const hf = /^(?:hf|huggingface):(?:[^/]+)\/([^/:]+)(?::([^/]+))?/i.exec(withoutQuery);
  if (hf) return slugify([hf[1]!.replace(/-gguf$/i, ''), hf[2]].filter(Boolean).join('-'));
  return slugify(path.basename(withoutQuery));
}

const positiveInt = (env: NodeJS.ProcessEnv, name: string): number | undefined => {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
  return n;
};

/** The provider id of the `OP_LOCAL_MODEL` engine. */
const ENV_PROVIDER = 'local';

/**
 * The config that `OP_LOCAL_MODEL=<path or hf: URI>` stands for when there is no config file:
 * one `local` provider and one model `local/<name>` served by it. Optional knobs:
 * `OP_LOCAL_CONTEXT_SIZE` (default 4096), `OP_LOCAL_PARALLEL` (2), `OP_LOCAL_THREADS` (engine
 * default), `OP_LOCAL_GPU_LAYERS` (0), `OP_LOCAL_CACHE_DIR` (./data/models).
 *
 * The model's `context_length` is the context the engine really runs, in tokens, once its
 * engine has loaded the model (the engine caps `OP_LOCAL_CONTEXT_SIZE` at the model's trained
 * context); before that, `OP_LOCAL_CONTEXT_SIZE`.
 * Returns the raw config object (validate it with `parseConfig`), or null when unset.
 */
export function localModelConfig(env: NodeJS.ProcessEnv = process.env): Record<string, unknown> | null {
  const source = env.OP_LOCAL_MODEL?.trim();
  if (!source) return null;
  const contextSize = positiveInt(env, 'OP_LOCAL_CONTEXT_SIZE') ?? 4096;
  const upstreamModel = isModelUri(source) ? source : path.resolve(source);
  const running = localEngineStatus().find((s) => s.providerId === ENV_PROVIDER && s.source === upstreamModel && s.state === 'ready');
  const local: Record<string, unknown> = { context_size: contextSize };
  const parallel = positiveInt(env, 'OP_LOCAL_PARALLEL');
  if (parallel !== undefined) local.parallel_sequences = parallel;
  const threads = positiveInt(env, 'OP_LOCAL_THREADS');
  if (threads !== undefined) local.threads = threads;
  const gpu = env.OP_LOCAL_GPU_LAYERS;
  if (gpu) local.gpu_layers = gpu === 'auto' || gpu === 'max' ? gpu : positiveInt(env, 'OP_LOCAL_GPU_LAYERS');
  if (env.OP_LOCAL_CACHE_DIR) local.cache_dir = env.OP_LOCAL_CACHE_DIR;
  const name = localModelName(source);
  return {
    providers: [{ id: ENV_PROVIDER, kind: 'local', local }],
    models: [
      {
        id: `local/${name}`,
        name: `${name} (local)`,
        // Only the catalog follows the engine: `local.context_size` stays what was asked for
        // (the engine's settings, unchanged, keep the same engine).
        context_length: running?.info?.contextSize ?? contextSize,
        architecture: { tokenizer: 'llama.cpp' },
        endpoints: [
          {
            provider: ENV_PROVIDER,
            upstream_model: upstreamModel,
            supports_text_completions: true,
            supported_parameters: [...LOCAL_SUPPORTED_PARAMETERS],
          },
        ],
      },
    ],
  };
}

/**
 * `loaded`, unless it came from no file and `OP_LOCAL_MODEL` is set: then the config serving
 * that model (see {@link localModelConfig}).
 * @throws ConfigError when the `OP_LOCAL_*` values are invalid.
 */
export function withLocalModel(loaded: LoadedConfig, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  if (loaded.source !== null) return loaded;
  const raw = localModelConfig(env);
  if (!raw) return loaded;
  return { config: parseConfig(raw, 'OP_LOCAL_MODEL', env), source: null };
}

/**
 * With `OP_LOCAL_MODEL` (no config file): once its engine is ready, the config whose catalog
 * shows the context the engine really runs, when that differs from `loaded`'s; else null.
 * Pass the result to the gateway's `reload`.
 */
export function withEngineContext(loaded: LoadedConfig, env: NodeJS.ProcessEnv = process.env): LoadedConfig | null {
  if (loaded.source !== null) return null;
  const next = withLocalModel(loaded, env);
  const before = loaded.config.models[0]?.context_length;
  const after = next.config.models[0]?.context_length;
  return after !== undefined && after !== before ? next : null;
}

/**
 * Start the engine of every `local` endpoint now instead of on its first request. Resolves
 * when all are ready; a failure is logged by the supervisor and does not reject.
 */
export async function prestartLocalEngines(config: Readonly<GatewayConfig>): Promise<Array<EngineInfo | Error>> {
  const providers = new Map(config.providers.filter((p) => p.kind === 'local').map((p) => [p.id, p]));
  const starts: Array<Promise<EngineInfo | Error>> = [];
  for (const model of config.models) {
    for (const endpoint of model.endpoints) {
      const provider = providers.get(endpoint.provider);
      if (!provider) continue;
      const { config: startConfig, loadWaitMs } = engineStartConfig(provider, endpoint.upstream_model);
      starts.push(engineFor(startConfig, loadWaitMs).whenReady().catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))));
    }
  }
  return Promise.all(starts);
}

/**
 * After a config reload (call with the new config): stop the engines of `local` endpoints that
 * are gone. (An endpoint whose engine settings changed gets a new engine on its next request.)
 */
export function retainLocalEngines(config: Readonly<GatewayConfig>): void {
  const wanted = new Set<string>();
  const providers = new Map(config.providers.filter((p) => p.kind === 'local').map((p) => [p.id, p]));
  for (const model of config.models) {
    for (const endpoint of model.endpoints) {
      const provider = providers.get(endpoint.provider);
      if (provider) wanted.add(`${provider.id}\u0000${engineStartConfig(provider, endpoint.upstream_model).config.source}`);
    }
  }
  stopEnginesExcept((providerId, source) => wanted.has(`${providerId}\u0000${source}`));
}
