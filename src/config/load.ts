import { readFileSync, existsSync } from 'node:fs';
import { parseDocument } from 'yaml';
import type { ZodIssue } from 'zod';
import { expandProviderPresets } from './provider-presets.js';
import { configSchema, EMBEDDING_BATCH_LIMIT, EMBEDDING_INPUTS, KIND_SCHEMAS, type GatewayConfig, type ProviderKind } from './schema.js';
import type { ProviderKindSchema } from './provider-kind-schema.js';

/** Thrown when the config cannot be read or is invalid; `issues` are `path: message` lines. */
export class ConfigError extends Error {
  readonly issues: readonly string[];
  constructor(source: string, issues: string[]) {
    super(`invalid configuration in ${source}:\n${issues.map((i) => `  - ${i}`).join('\n')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** A validated, deeply frozen configuration plus where it came from. */
export interface LoadedConfig {
  readonly config: Readonly<GatewayConfig>;
  /** The file read, or `null` when none existed and the empty default is used. */
  readonly source: string | null;
  /**
   * What is valid but probably not meant, as `path: message` lines: a provider's `api_key` or
   * header left empty by `${VAR:-}` with VAR unset. `config check` prints them; `serve` logs them.
   */
  readonly warnings?: readonly string[];
}

/** Render a zod/JSON path as `models[0].endpoints[1].provider`. */
export function formatPath(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out === '' ? '(root)' : out;
}

function formatIssue(issue: ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => `${formatPath([...issue.path, k])}: unknown key`).join('\n  - ');
  }
  if (issue.code === 'invalid_union') {
    return `${formatPath(issue.path)}: ${issue.unionErrors[0]?.issues[0]?.message ?? issue.message}`;
  }
  return `${formatPath(issue.path)}: ${issue.message}`;
}

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** What {@link substituteEnv} found: unset variables without a default, and values left empty. */
interface EnvReport {
  /** `path: environment variable X is not set` (errors). */
  issues: string[];
  /** Values that became '' only through an empty default: path and the variables used. */
  emptied: { path: (string | number)[]; names: string[] }[];
}

/**
 * Replace `${VAR}` (and `${VAR:-default}`) in every string value, recording a path-named issue
 * for each variable that is unset and has no default, and each value an empty default emptied.
 */
function substituteEnv(value: unknown, env: NodeJS.ProcessEnv, path: (string | number)[], report: EnvReport): unknown {
  if (typeof value === 'string') {
    const defaulted: string[] = [];
    const out = value.replace(VAR, (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== '') return v;
      if (fallback !== undefined) {
        defaulted.push(name);
        return fallback;
      }
      report.issues.push(`${formatPath(path)}: environment variable ${name} is not set`);
      return '';
    });
    if (out === '' && defaulted.length > 0) report.emptied.push({ path, names: defaulted });
    return out;
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, env, [...path, i], report));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = substituteEnv(v, env, [...path, k], report);
    return out;
  }
  return value;
}

/**
 * Warnings for provider credentials an empty default left empty (`api_key: ${OPENAI_API_KEY:-}`
 * with the variable unset): valid, so the gateway starts, but every call to that provider goes
 * out without its key and the provider refuses it.
 */
function emptiedCredentialWarnings(report: EnvReport, substituted: unknown): string[] {
  const providers = asList((substituted as Loose | null)?.providers);
  const out: string[] = [];
  for (const { path, names } of report.emptied) {
    const [root, index, field] = path;
    if (root !== 'providers' || typeof index !== 'number' || (field !== 'api_key' && field !== 'headers' && field !== 'api_keys')) continue;
    const id = asString(providers[index]?.id) ?? `providers[${index}]`;
    const vars = names.join(', ');
    const entry = field === 'api_keys' && typeof path[3] === 'number' ? asList(providers[index]?.api_keys)[path[3]] : undefined;
    const what = field === 'api_key' ? 'api_key' : field === 'api_keys' ? `key "${asString(entry?.label) ?? String(path[3])}" in api_keys` : `header ${String(path[3])}`;
    // Kind bedrock without its API key signs with the AWS default chain instead; a list's entry goes alone.
    const outcome =
      field === 'api_key' && providers[index]?.kind === 'bedrock' ? 'so its requests are signed with the AWS default credential chain instead of a Bedrock API key' : field === 'api_keys' ? 'so the requests that draw it go out without a key' : 'so its requests go out without a key';
    const remedy = field === 'api_keys' ? 'or remove that entry' : 'or remove the provider';
    out.push(`${formatPath(path)}: provider "${id}" has an empty ${what}: ${vars} ${names.length === 1 ? 'is' : 'are'} not set (the default after ":-" is empty), ${outcome}; set ${vars}, ${remedy}`);
  }
  return out;
}

/** Provider kinds whose adapter serves `POST /embeddings` (an endpoint's `embeddings: true`). */
const EMBEDDING_KINDS: readonly string[] = Object.entries(EMBEDDING_INPUTS).filter(([, inputs]) => inputs !== null).map(([kind]) => kind);

/** Provider kinds without a default upstream (a kind's `requiresBaseUrl`): `base_url` is required. */
const BASE_URL_KINDS: readonly string[] = KIND_SCHEMAS.filter((k) => k.requiresBaseUrl).map((k) => k.kind);

/** Provider fields a kind requires (a kind's `requiredProviderFields`), by kind. */
const REQUIRED_FIELDS: ReadonlyMap<string, readonly string[]> = new Map(
  KIND_SCHEMAS.flatMap((k) => ('requiredProviderFields' in k ? [[k.kind, k.requiredProviderFields] as const] : [])),
);

/** The kinds' refusals of `api_keys` (a kind's `refuseApiKeys`), by kind. */
const API_KEYS_REFUSALS: ReadonlyMap<string, NonNullable<ProviderKindSchema['refuseApiKeys']>> = new Map(
  KIND_SCHEMAS.flatMap((k) => ('refuseApiKeys' in k ? [[k.kind, k.refuseApiKeys] as const] : [])),
);

/** The kinds' checks of a provider's fields together (a kind's `checkProvider`), by kind. */
const PROVIDER_CHECKS: ReadonlyMap<string, NonNullable<ProviderKindSchema['checkProvider']>> = new Map(
  KIND_SCHEMAS.flatMap((k) => ('checkProvider' in k ? [[k.kind, k.checkProvider] as const] : [])),
);

/**
 * Checks of a provider's `api_keys` (credentials-schema.ts) the schema cannot express: not with
 * `api_key`, labels unique, a kind whose auth is a key. `at` is `providers[i]`.
 */
function checkApiKeys(p: Loose, at: string): string[] {
  if (p.api_keys === undefined) return [];
  const issues: string[] = [];
  if (p.api_key !== undefined) issues.push(`${at}.api_keys: give either api_key or api_keys, not both (api_key is one key; api_keys lists several with labels and weights)`);
  const refusal = typeof p.kind === 'string' ? API_KEYS_REFUSALS.get(p.kind)?.(p) : undefined;
  if (refusal !== undefined) issues.push(`${at}.api_keys: ${refusal}`);
  const seen = new Map<string, number>();
  asList(p.api_keys).forEach((k, j) => {
    const label = asString(k.label);
    if (label === undefined) return;
    const first = seen.get(label.toLowerCase());
    if (first !== undefined) issues.push(`${at}.api_keys[${j}].label: duplicate label "${label}" (also api_keys[${first}]; labels are unique per provider, case-insensitively)`);
    else seen.set(label.toLowerCase(), j);
  });
  return issues;
}

/** The kinds' endpoint checks that read the provider's fields (a kind's `checkEndpoint`), by kind. */
const ENDPOINT_CHECKS: ReadonlyMap<string, NonNullable<ProviderKindSchema['checkEndpoint']>> = new Map(
  KIND_SCHEMAS.flatMap((k) => ('checkEndpoint' in k ? [[k.kind, k.checkEndpoint] as const] : [])),
);

/**
 * Endpoint flags only one kind may set (a kind's `exclusiveEndpointFlags`): the field, its kind,
 * and the refusal for an endpoint of another kind.
 */
const EXCLUSIVE_FLAGS: readonly { field: string; kind: string; refusal: (kind: string) => string }[] = KIND_SCHEMAS.flatMap((k) =>
  'exclusiveEndpointFlags' in k ? Object.entries(k.exclusiveEndpointFlags).map(([field, refusal]) => ({ field, kind: k.kind, refusal })) : [],
);

type Loose = Record<string, unknown>;
const asList = (v: unknown): Loose[] => (Array.isArray(v) ? v.map((x) => (x !== null && typeof x === 'object' ? (x as Loose) : {})) : []);
const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const asNumber = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * Cross-reference checks the schema cannot express. They read the config loosely (a field of
 * the wrong type is skipped, the schema reports it), so they run even when the schema failed
 * and one report lists every problem of the file.
 */
function checkReferences(raw: unknown): string[] {
  const config = raw !== null && typeof raw === 'object' ? (raw as Loose) : {};
  const issues: string[] = [];
  const providers = new Map<string, string | undefined>();
  const rawProviders = new Map<string, Loose>();
  asList(config.providers).forEach((p, i) => {
    const id = asString(p.id);
    if (id === undefined) return;
    if (providers.has(id)) issues.push(`providers[${i}].id: duplicate provider id "${id}"`);
    providers.set(id, asString(p.kind));
    rawProviders.set(id, p);
    const baseUrl = asString(p.base_url);
    if (typeof p.kind === 'string' && BASE_URL_KINDS.includes(p.kind) && !baseUrl) {
      issues.push(`providers[${i}].base_url: required for kind "${p.kind}"`);
    }
    for (const field of typeof p.kind === 'string' ? (REQUIRED_FIELDS.get(p.kind) ?? []) : []) {
      if (p[field] === undefined) issues.push(`providers[${i}].${field}: required for kind "${p.kind}"`);
    }
    issues.push(...checkApiKeys(p, `providers[${i}]`));
    const refused = typeof p.kind === 'string' ? PROVIDER_CHECKS.get(p.kind)?.(p) : undefined;
    if (refused !== undefined) issues.push(`providers[${i}].${refused}`);
    if (baseUrl && !/^https?:\/\//.test(baseUrl)) {
      issues.push(`providers[${i}].base_url: must start with http:// or https://`);
    }
  });
  const models = new Set<string>();
  asList(config.models).forEach((m, i) => {
    const id = asString(m.id);
    if (id !== undefined && models.has(id)) issues.push(`models[${i}].id: duplicate model id "${id}"`);
    if (id !== undefined) models.add(id);
    asList(m.endpoints).forEach((e, j) => {
      const at = `models[${i}].endpoints[${j}]`;
      const provider = asString(e.provider);
      const kind = provider === undefined ? undefined : providers.get(provider);
      if (provider !== undefined && !providers.has(provider)) {
        const known = [...providers.keys()].join(', ') || 'none configured';
        issues.push(`${at}.provider: unknown provider "${provider}" (known: ${known})`);
      } else if (e.embeddings === true && kind !== undefined && !EMBEDDING_KINDS.includes(kind)) {
        issues.push(`${at}.embeddings: provider kind "${kind}" does not serve embeddings (kinds that do: ${EMBEDDING_KINDS.join(', ')})`);
      }
      const batchLimit = kind === undefined ? undefined : EMBEDDING_BATCH_LIMIT[kind as ProviderKind];
      const batch = asNumber(e.max_embedding_inputs);
      if (batchLimit !== undefined && batch !== undefined && batch > batchLimit) {
        issues.push(`${at}.max_embedding_inputs: provider kind "${kind}" takes at most ${batchLimit} inputs per embeddings call (got ${batch})`);
      }
      const check = kind === undefined ? undefined : ENDPOINT_CHECKS.get(kind);
      const refusal = check && provider !== undefined ? check(rawProviders.get(provider) ?? {}, e) : undefined;
      if (refusal !== undefined) issues.push(`${at}.${refusal}`);
      for (const flag of EXCLUSIVE_FLAGS) {
        if (e[flag.field] === true && kind !== undefined && kind !== flag.kind) issues.push(`${at}.${flag.field}: ${flag.refusal(kind)}`);
      }
      const ctx = asNumber(e.context_length) ?? asNumber(m.context_length);
      const max = asNumber(e.max_completion_tokens);
      if (max !== undefined && ctx !== undefined && max > ctx) {
        issues.push(`${at}.max_completion_tokens: ${max} exceeds the context length ${ctx}`);
      }
    });
  });
  // An alias must name one model and never shadow a model id.
  const aliases = new Map<string, string>();
  asList(config.models).forEach((m, i) => {
    (Array.isArray(m.aliases) ? m.aliases : []).forEach((a, j) => {
      if (typeof a !== 'string') return;
      if (models.has(a)) issues.push(`models[${i}].aliases[${j}]: "${a}" is the id of a model`);
      else if (aliases.has(a)) issues.push(`models[${i}].aliases[${j}]: "${a}" is already an alias of ${aliases.get(a)}`);
      aliases.set(a, asString(m.id) ?? `models[${i}]`);
    });
  });
  // The schema's own refine of `server` runs only when every other server field is valid; here it
  // runs whatever else is wrong (same message: the report lists it once).
  const server = config.server !== null && typeof config.server === 'object' ? (config.server as Loose) : {};
  const timeout = (v: unknown, dflt: number) => (v === undefined ? dflt : Number.isInteger(v) && (v as number) >= 0 ? (v as number) : undefined);
  const headers = timeout(server.headers_timeout_ms, 15_000);
  const request = timeout(server.request_timeout_ms, 120_000);
  if (headers !== undefined && request !== undefined && request !== 0 && headers !== 0 && headers > request) {
    issues.push('server.headers_timeout_ms: headers_timeout_ms must not be longer than request_timeout_ms');
  }
  issues.push(...checkPresetReferences(config, models));
  const mcpIds = new Map<string, number>();
  asList(config.mcp_servers).forEach((s, i) => {
    const id = asString(s.id);
    if (id === undefined) return;
    const first = mcpIds.get(id);
    if (first !== undefined) issues.push(`mcp_servers[${i}].id: duplicate MCP server id "${id}" (also mcp_servers[${first}])`);
    else mcpIds.set(id, i);
  });
  return issues;
}

/** Presets and variants: unique names, preset models that exist (a variant suffix allowed). */
function checkPresetReferences(config: Loose, models: ReadonlySet<string>): string[] {
  const issues: string[] = [];
  const slugs = new Set<string>();
  asList(config.presets).forEach((p, i) => {
    const slug = asString(p.slug);
    if (slug !== undefined && slugs.has(slug)) issues.push(`presets[${i}].slug: duplicate preset "${slug}"`);
    if (slug !== undefined) slugs.add(slug);
    (Array.isArray(p.models) ? p.models : []).forEach((m: unknown, j: number) => {
      if (typeof m !== 'string') return;
      const base = models.has(m) ? m : m.replace(/:[^:/]+$/, '');
      if (!models.has(base)) issues.push(`presets[${i}].models[${j}]: unknown model "${m}" (known: ${[...models].join(', ') || 'none configured'})`);
    });
  });
  const names = new Set<string>();
  asList(config.model_variants).forEach((v, i) => {
    const name = asString(v.name);
    if (name !== undefined && names.has(name)) issues.push(`model_variants[${i}].name: duplicate variant "${name}"`);
    if (name !== undefined) names.add(name);
  });
  return issues;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

/** Options of {@link parseConfig} and {@link loadConfig}. */
export interface ParseOptions {
  /**
   * false: the providers' secrets (`api_key`, `api_keys[].key`, `headers`, kind `azure`'s `entra` credentials) and the MCP servers' `headers`, `env` and `oauth` are not read, so variables they name
   * need not be set. For commands that only need the catalog (`keys create --models`); such a
   * config has no credentials and must not serve.
   */
  secrets?: boolean;
  /**
   * false: `${VAR}` is not substituted (the values are taken as they are). For a config already
   * substituted once: the file's, merged with catalog entries entered through the API
   * (catalog-overlay.ts), which never read the environment.
   */
  substitute?: boolean;
}

/** Drop the providers' `api_key`, `api_keys[].key`, `headers` and `entra`, and the MCP servers' `headers`, `env` and `oauth`, before substitution (see {@link ParseOptions.secrets}). */
function withoutSecrets(raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object') return raw;
  const providers = !Array.isArray((raw as Loose).providers) ? (raw as Loose).providers : ((raw as Loose).providers as unknown[]).map((p) => {
    if (p === null || typeof p !== 'object') return p;
    const { api_key: _k, headers: _h, entra: _e, ...rest } = p as Loose;
    // The keys go, their labels and weights stay (an empty key: the config must not serve).
    if (Array.isArray(rest.api_keys)) rest.api_keys = rest.api_keys.map((k: unknown) => (k !== null && typeof k === 'object' ? { ...(k as Loose), key: '' } : k));
    return rest;
  });
  // MCP servers' headers and stdio environments hold their credentials the same way.
  const mcp = Array.isArray((raw as Loose).mcp_servers)
    ? ((raw as Loose).mcp_servers as unknown[]).map((s) => {
        if (s === null || typeof s !== 'object') return s;
        const { headers: _h, env: _e, oauth: _o, ...rest } = s as Loose;
        return rest;
      })
    : (raw as Loose).mcp_servers;
  return { ...(raw as Loose), ...(providers === undefined ? {} : { providers }), ...(mcp === undefined ? {} : { mcp_servers: mcp }) };
}

/**
 * An unset-variable issue of a key a provider preset defaulted (`providers[0].api_key:
 * environment variable GROQ_API_KEY is not set`), with the note saying the preset put it there.
 */
function withKeyNote(issue: string, notes: ReadonlyMap<string, string>): string {
  const note = notes.get(issue.slice(0, issue.indexOf(': ')));
  return note === undefined ? issue : `${issue} (${note})`;
}

/** {@link parseConfig}, with the warnings of {@link LoadedConfig.warnings}. */
export function parseConfigWithWarnings(raw: unknown, source: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): { config: Readonly<GatewayConfig>; warnings: string[] } {
  const report: EnvReport = { issues: [], emptied: [] };
  // Provider presets first: their key default is a `${VAR}` to substitute (and to drop without secrets).
  const presets = expandProviderPresets(raw ?? {});
  const chosen = options.secrets === false ? withoutSecrets(presets.config) : presets.config;
  const substituted = options.substitute === false ? chosen : substituteEnv(chosen, env, [], report);
  const envIssues = report.issues.map((i) => withKeyNote(i, presets.keyNotes));
  const result = configSchema.safeParse(substituted);
  // A value whose variable is unset is reported once, for the variable, not again for being
  // empty; a preset's issue once, not again as the schema's (an unknown preset leaves no kind).
  const covered = [...envIssues.map((i) => i.slice(0, i.indexOf(': '))), ...presets.covered];
  const schemaIssues = result.success ? [] : result.error.issues.map(formatIssue).filter((i) => !covered.some((p) => i.startsWith(`${p}: `) || i.startsWith(`${p}.`) || i.startsWith(`${p}[`)));
  const issues = [...new Set([...envIssues, ...presets.issues, ...schemaIssues, ...checkReferences(substituted)])];
  if (issues.length > 0 || !result.success) throw new ConfigError(source, issues);
  return { config: deepFreeze(result.data), warnings: emptiedCredentialWarnings(report, substituted) };
}

/**
 * Validate a parsed config object: provider presets filled in, env substitution, strict schema,
 * cross-references, freeze.
 * @throws ConfigError listing every problem of the config with its path, all in one report
 * (unknown presets, unset variables, schema violations and dangling references together).
 */
export function parseConfig(raw: unknown, source: string, env: NodeJS.ProcessEnv = process.env, options: ParseOptions = {}): Readonly<GatewayConfig> {
  return parseConfigWithWarnings(raw, source, env, options).config;
}

/**
 * Read and validate the config file. A missing file is not an error when `required` is false:
 * the gateway then starts with an empty catalog.
 * @throws ConfigError on YAML syntax errors, schema violations and dangling references.
 */
export function loadConfig(path: string, options: { required?: boolean; env?: NodeJS.ProcessEnv } & ParseOptions = {}): LoadedConfig {
  if (!existsSync(path)) {
    if (options.required) throw new ConfigError(path, [`(file): not found`]);
    return { config: parseConfig({}, '(defaults)', options.env), source: null, warnings: [] };
  }
  const text = readFileSync(path, 'utf8');
  if (text.trim() === '') {
    throw new ConfigError(path, ['(file): the file is empty (a truncated save?); to run with no models, remove the file']);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(path, doc.errors.map((e) => `(yaml): ${e.message.split('\n')[0]}`));
  }
  const { config, warnings } = parseConfigWithWarnings(doc.toJS(), path, options.env, options);
  return { config, source: path, warnings };
}
