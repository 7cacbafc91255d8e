import { statSync } from 'node:fs';
import path from 'node:path';
import type { GatewayConfig } from '../../config/schema.js';
import { localEngineStatus } from './engine-supervisor.js';
import { isModelUri } from './local-settings.js';

/** A `local` endpoint whose model source is a file path with no file there. */
export interface MissingModelFile {
  /** Where in the config: `models[0].endpoints[1].upstream_model`. */
  at: string;
  model: string;
  provider: string;
  /** The absolute path looked at. */
  file: string;
  /** `not found`, or `not a file` (a folder, say). */
  problem: 'not found' | 'not a file';
}

/**
 * The model files of `local` endpoints that are not there (sources given as paths; `hf:` and
 * `https:` sources are downloaded when the engine starts and are not checked). One `stat` per
 * endpoint: for `config check` and `/ready`, not for the request path.
 */
export function missingLocalModelFiles(config: Readonly<GatewayConfig>): MissingModelFile[] {
  const local = new Set(config.providers.filter((p) => p.kind === 'local').map((p) => p.id));
  const missing: MissingModelFile[] = [];
  config.models.forEach((model, i) => {
    model.endpoints.forEach((endpoint, j) => {
      if (!local.has(endpoint.provider) || isModelUri(endpoint.upstream_model)) return;
      const file = path.resolve(endpoint.upstream_model);
      let problem: MissingModelFile['problem'] | null = null;
      try {
        if (!statSync(file).isFile()) problem = 'not a file';
      } catch {
        problem = 'not found';
      }
      if (problem) missing.push({ at: `models[${i}].endpoints[${j}].upstream_model`, model: model.id, provider: endpoint.provider, file, problem });
    });
  });
  return missing;
}

/** One line for an operator: `model file not found: /m/x.gguf (model local/x, provider local)`. */
export function describeMissingModelFile(m: MissingModelFile): string {
  return `model file ${m.problem}: ${m.file} (model ${m.model}, provider ${m.provider})`;
}

/**
 * Why the `local` endpoints of `config` cannot serve, for `/ready`: a model file that is not
 * there, or an engine that failed to start for good (see `EngineState` `failed`), with the
 * file named. Null when nothing is wrong (an engine still loading is not a problem).
 */
export function localModelsNotReady(config: Readonly<GatewayConfig>): string | null {
  const missing = missingLocalModelFiles(config);
  if (missing.length > 0) return missing.map(describeMissingModelFile).join('; ');
  const local = new Set(config.providers.filter((p) => p.kind === 'local').map((p) => p.id));
  const failed = localEngineStatus().filter((s) => s.state === 'failed' && local.has(s.providerId));
  if (failed.length === 0) return null;
  return failed.map((s) => `the local engine of provider ${s.providerId} cannot start for ${s.source}: ${s.lastError ?? 'unknown error'}`).join('; ');
}
