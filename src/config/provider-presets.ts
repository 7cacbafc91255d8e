import { describeApiKeys } from './credentials-schema.js';
import type { GatewayConfig, ProviderConfig, ProviderKind } from './schema.js';

/**
 * Provider presets: `preset: groq` in a `providers[]` entry fills in the kind, `base_url`,
 * `dialect` (kind `openai`) and where the key comes from, so the entry names only its id (and
 * the key, when its variable is not the usual one). Not to be confused with the model presets
 * (`presets:`, `@preset/<slug>`, see presets-schema.ts): those are request settings, these are
 * `providers[]` defaults.
 *
 * The expansion runs on the raw config before `${VAR}` substitution (load.ts): a preset's key
 * default is the text `${GROQ_API_KEY}`, substituted like one the file wrote, so an unset
 * variable is the usual path-named error. Fields the entry sets win over the preset's.
 */

/** The preset names, in the order error messages and docs list them. */
export const PROVIDER_PRESET_NAMES = [
  'openai', 'anthropic', 'gemini', 'openrouter', 'deepseek', 'xai', 'mistral', 'together',
  'fireworks', 'cerebras', 'groq', 'ollama', 'vllm', 'lmstudio', 'llamacpp',
] as const;

/** A `providers[]` entry's `preset` value. */
export type ProviderPresetName = (typeof PROVIDER_PRESET_NAMES)[number];

/** The kinds a preset may have: those that speak to a remote server with a key (not `local`). */
export type PresetKind = Extract<ProviderKind, 'openai' | 'anthropic' | 'gemini'>;

/** What one preset fills into a `providers[]` entry that does not set the field itself. */
export interface ProviderPreset {
  /** The service, as docs and `config check` name it. */
  readonly title: string;
  /** The provider kind (the wire format). An entry's own `kind` must be this one. */
  readonly kind: PresetKind;
  /** The upstream's base URL: for kind `openai` the server's `/v1` (or its equivalent). */
  readonly base_url: string;
  /** Kind `openai` only: the server family (a row of providers/openai/dialects.ts). */
  readonly dialect?: ProviderConfig['dialect'];
  /**
   * The environment variable the key is read from when the entry has no `api_key` (the preset
   * puts `${VAR}` there). Absent for the local servers, which need no key (an entry may still
   * give one, e.g. vLLM's `--api-key`).
   */
  readonly key_env?: string;
}

/**
 * The presets. Local servers point at 127.0.0.1 (not `localhost`, which may resolve to ::1
 * while the server listens on IPv4 only) on their usual ports. A service with no dialect of
 * its own (xAI, Together, Fireworks, Cerebras, LM Studio) gets `openai`.
 */
export const PROVIDER_PRESETS: Readonly<Record<ProviderPresetName, ProviderPreset>> = Object.freeze({
  openai: { title: 'OpenAI', kind: 'openai', base_url: 'https://api.openai.com/v1', dialect: 'openai', key_env: 'OPENAI_API_KEY' },
  anthropic: { title: 'Anthropic', kind: 'anthropic', base_url: 'https://api.anthropic.com', key_env: 'ANTHROPIC_API_KEY' },
  gemini: { title: 'Google Gemini API', kind: 'gemini', base_url: 'https://generativelanguage.googleapis.com', key_env: 'GEMINI_API_KEY' },
  openrouter: { title: 'OpenRouter', kind: 'openai', base_url: 'https://openrouter.ai/api/v1', dialect: 'openrouter', key_env: 'OPENROUTER_API_KEY' },
  deepseek: { title: 'DeepSeek', kind: 'openai', base_url: 'https://api.deepseek.com', dialect: 'deepseek', key_env: 'DEEPSEEK_API_KEY' },
  xai: { title: 'xAI', kind: 'openai', base_url: 'https://api.x.ai/v1', dialect: 'openai', key_env: 'XAI_API_KEY' },
  mistral: { title: 'Mistral', kind: 'openai', base_url: 'https://api.mistral.ai/v1', dialect: 'mistral', key_env: 'MISTRAL_API_KEY' },
  together: { title: 'Together AI', kind: 'openai', base_url: 'https://api.together.ai/v1', dialect: 'openai', key_env: 'TOGETHER_API_KEY' },
  fireworks: { title: 'Fireworks AI', kind: 'openai', base_url: 'https://api.fireworks.ai/inference/v1', dialect: 'openai', key_env: 'FIREWORKS_API_KEY' },
  cerebras: { title: 'Cerebras', kind: 'openai', base_url: 'https://api.cerebras.ai/v1', dialect: 'openai', key_env: 'CEREBRAS_API_KEY' },
  groq: { title: 'Groq', kind: 'openai', base_url: 'https://api.groq.com/openai/v1', dialect: 'groq', key_env: 'GROQ_API_KEY' },
  ollama: { title: 'Ollama', kind: 'openai', base_url: 'http://127.0.0.1:11434/v1', dialect: 'ollama' },
  vllm: { title: 'vLLM', kind: 'openai', base_url: 'http://127.0.0.1:8000/v1', dialect: 'vllm' },
  lmstudio: { title: 'LM Studio', kind: 'openai', base_url: 'http://127.0.0.1:1234/v1', dialect: 'openai' },
  llamacpp: { title: 'llama.cpp server', kind: 'openai', base_url: 'http://127.0.0.1:8080/v1', dialect: 'llamacpp' },
});

/**
 * How each kind a preset may have sends the key: the header its adapter sets from `api_key`
 * (providers/openai `headersFor`, providers/anthropic `anthropicHeaders`, providers/gemini
 * `geminiHeaders`; test/ops/provider-presets.test.ts checks they agree). For docs and
 * `config check`; the adapters do the sending.
 */
export const KEY_HEADER: Readonly<Record<PresetKind, string>> = Object.freeze({
  openai: 'Authorization: Bearer',
  anthropic: 'x-api-key',
  gemini: 'x-goog-api-key',
});

/** What {@link expandProviderPresets} made of a raw config. */
export interface PresetExpansion {
  /** The raw config with each preset's defaults filled into its entry (the input itself when no entry names a preset). */
  readonly config: unknown;
  /** `path: message` lines: an unknown preset, an entry's `kind` that contradicts its preset. */
  readonly issues: string[];
  /**
   * Paths whose schema issues an issue above already explains, so the report lists the cause
   * once: an unknown preset (`providers[i].preset`) leaves `providers[i].kind` unset.
   */
  readonly covered: string[];
  /** `providers[i].api_key` → why a preset put `${VAR}` there, for the "is not set" issue of that variable. */
  readonly keyNotes: ReadonlyMap<string, string>;
}

type Loose = Record<string, unknown>;
const isObject = (v: unknown): v is Loose => v !== null && typeof v === 'object' && !Array.isArray(v);
const isPresetName = (v: unknown): v is ProviderPresetName => typeof v === 'string' && (PROVIDER_PRESET_NAMES as readonly string[]).includes(v);

/** The fields a preset fills in, as a raw `providers[]` entry would give them. */
function presetDefaults(preset: ProviderPreset, ownKeys: boolean): Loose {
  return {
    kind: preset.kind,
    base_url: preset.base_url,
    ...(preset.dialect !== undefined ? { dialect: preset.dialect } : {}),
    // An entry that lists its own `api_keys` takes no default key (the two are exclusive).
    ...(preset.key_env !== undefined && !ownKeys ? { api_key: `\${${preset.key_env}}` } : {}),
  };
}

/** One entry's expansion: the entry with the preset's defaults under its own fields (an absent or `undefined` field takes the default). */
function expandEntry(entry: Loose, i: number): { entry: Loose; issues: string[]; covered: string[]; keyNote?: string } {
  const at = `providers[${i}]`;
  const name = entry.preset;
  if (!isPresetName(name)) {
    const shown = typeof name === 'string' ? `"${name}"` : JSON.stringify(name) ?? String(name);
    return {
      entry,
      issues: [`${at}.preset: unknown provider preset ${shown} (known: ${PROVIDER_PRESET_NAMES.join(', ')})`],
      covered: [`${at}.preset`, ...(entry.kind === undefined ? [`${at}.kind`] : [])],
    };
  }
  const preset = PROVIDER_PRESETS[name];
  const issues = entry.kind !== undefined && entry.kind !== preset.kind
    ? [`${at}.kind: ${JSON.stringify(entry.kind)} contradicts preset "${name}", which is kind "${preset.kind}" (leave kind out, or drop the preset)`]
    : [];
  const own = Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== undefined));
  const ownKeys = own.api_keys !== undefined;
  const keyNote = preset.key_env !== undefined && own.api_key === undefined && !ownKeys
    ? `preset "${name}" reads the key from it when the entry has no api_key: set ${preset.key_env}, or give api_key`
    : undefined;
  return { entry: { ...presetDefaults(preset, ownKeys), ...own }, issues, covered: [], ...(keyNote !== undefined ? { keyNote } : {}) };
}

/**
 * Fill every `providers[]` entry that names a `preset` with that preset's defaults (see
 * {@link PROVIDER_PRESETS}); the entry's own fields win, `preset` itself stays. Pure: reads the
 * config loosely (a malformed `providers` is left to the schema) and never mutates it.
 */
export function expandProviderPresets(raw: unknown): PresetExpansion {
  if (!isObject(raw) || !Array.isArray(raw.providers) || !raw.providers.some((p) => isObject(p) && p.preset !== undefined)) {
    return { config: raw, issues: [], covered: [], keyNotes: new Map() };
  }
  const issues: string[] = [];
  const covered: string[] = [];
  const keyNotes = new Map<string, string>();
  const providers = raw.providers.map((p: unknown, i: number) => {
    if (!isObject(p) || p.preset === undefined) return p;
    const out = expandEntry(p, i);
    issues.push(...out.issues);
    covered.push(...out.covered);
    if (out.keyNote !== undefined) keyNotes.set(`providers[${i}].api_key`, out.keyNote);
    return out.entry;
  });
  return { config: { ...raw, providers }, issues, covered, keyNotes };
}

/** One setting as `config check` shows it: the value, and whether the entry overrode the preset's. */
function setting(name: string, value: string | undefined, presetValue: string | undefined): string {
  const shown = value ?? '(unset)';
  return value === presetValue ? `${name} ${shown}` : `${name} ${shown} (the entry's; the preset's: ${presetValue ?? '(none)'})`;
}

/**
 * What each provider that names a preset expanded to, one line each, for `config check`:
 * `providers[0] "groq": preset groq (Groq) → kind openai, base_url …, dialect groq, key set
 * (sent as Authorization: Bearer)`. A value the entry set itself is marked with the preset's.
 * The key is shown as set or not set, never its value.
 */
export function describePresetExpansions(config: Pick<GatewayConfig, 'providers'>): string[] {
  return config.providers.flatMap((p, i) => {
    if (p.preset === undefined) return [];
    const preset = PROVIDER_PRESETS[p.preset];
    const parts = [`kind ${p.kind}`, setting('base_url', p.base_url, preset.base_url)];
    if (p.kind === 'openai') parts.push(setting('dialect', p.dialect, preset.dialect));
    if (p.api_keys) parts.push(`${describeApiKeys(p.api_keys)} (sent as ${KEY_HEADER[preset.kind]})`);
    else if (p.api_key) parts.push(`key set (sent as ${KEY_HEADER[preset.kind]})`);
    else parts.push(preset.key_env === undefined ? 'no key (the server needs none)' : 'key not set (empty)');
    return [`providers[${i}] "${p.id}": preset ${p.preset} (${preset.title}) → ${parts.join(', ')}`];
  });
}
