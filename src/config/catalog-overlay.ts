import { PROVIDER_PRESETS } from './provider-presets.js';
import type { GatewayConfig } from './schema.js';

/**
 * The catalog entered through the admin API (issue 23 item 6), laid over the config file's:
 * pure functions that check an entry before it is stored, seal and redact its secrets, and merge
 * the stored entries with the file's providers and models into one raw config to validate
 * exactly as the file is (`parseConfigWithWarnings(raw, …, { substitute: false })`).
 *
 * Merge rules (docs/catalog.md): the file's providers and models come first and are read-only
 * through the API; stored entries are appended in creation order; a stored entry whose id the file
 * now also has is shadowed (the file wins, the entry is reported, not served); everything else of
 * the config (server, routing, limits, MCP servers, …) is the file's alone.
 */

type Loose = Record<string, unknown>;

/** Most `headers` a provider entered through the API may carry. */
const MAX_API_HEADERS = 64;

/** A stored entry as the merge needs it: which list, its id, and the file-shaped entry with its secrets open. */
export interface OverlayEntry {
  kind: 'provider' | 'model';
  id: string;
  entry: Loose;
}

/** The raw config to validate, and the stored entries the file shadows (`provider x`, `model a/b`). */
export interface MergedCatalog {
  raw: Loose;
  shadowed: string[];
}

/**
 * Lay `entries` over `file`: `raw` is the file's config (already validated and substituted, as
 * plain JSON) with the stored providers and models appended, unless the file has their id.
 */
export function mergeCatalog(file: Readonly<GatewayConfig>, entries: readonly OverlayEntry[]): MergedCatalog {
  const raw = JSON.parse(JSON.stringify(file)) as Loose & { providers: Loose[]; models: Loose[] };
  const providerIds = new Set(raw.providers.map((p) => p.id));
  const modelIds = new Set(raw.models.map((m) => m.id));
  const shadowed: string[] = [];
  for (const e of entries) {
    const ids = e.kind === 'provider' ? providerIds : modelIds;
    if (ids.has(e.id)) {
      shadowed.push(`${e.kind} ${e.id}`);
      continue;
    }
    (e.kind === 'provider' ? raw.providers : raw.models).push({ ...e.entry, id: e.id });
  }
  return { raw, shadowed };
}

/**
 * Where a merged config's issue points, said for the API: `models[3].endpoints[0].provider`
 * becomes `models["team/m"].endpoints[0].provider` (the list index means nothing to a client),
 * and within the entry being written, just `endpoints[0].provider`.
 */
export function entryIssuePath(issue: string, raw: Loose, own?: { kind: 'provider' | 'model'; id: string }): string {
  const m = /^(providers|models)\[(\d+)\](.*)$/s.exec(issue);
  if (!m) return issue;
  const list = raw[m[1]!] as Loose[] | undefined;
  const id = list?.[Number(m[2])]?.id;
  if (typeof id !== 'string') return issue;
  const kind = m[1] === 'providers' ? 'provider' : 'model';
  if (own && own.kind === kind && own.id === id) return m[3]!.replace(/^\./, '') || '(entry)';
  return `${m[1]}[${JSON.stringify(id)}]${m[3]}`;
}

/** A secret field of a provider entry: its path from the entry (`api_key`, `headers.x`, `api_keys[0].key`, `entra.client_secret`). */
type SecretPath = (string | number)[];

/** Every secret of a provider entry, by path: the values sealed at rest and never shown again. */
export function secretPaths(entry: Loose): SecretPath[] {
  const out: SecretPath[] = [];
  if (typeof entry.api_key === 'string') out.push(['api_key']);
  if (Array.isArray(entry.api_keys)) entry.api_keys.forEach((k, i) => typeof (k as Loose)?.key === 'string' && out.push(['api_keys', i, 'key']));
  if (entry.headers && typeof entry.headers === 'object') for (const [name, v] of Object.entries(entry.headers)) if (typeof v === 'string') out.push(['headers', name]);
  const entra = entry.entra as Loose | undefined;
  if (entra && typeof entra === 'object') for (const f of ['client_secret', 'certificate_password']) if (typeof entra[f] === 'string') out.push(['entra', f]);
  return out;
}

/** A copy of `entry` with every secret value replaced by `fn(value, path)`. */
export function mapSecrets(entry: Loose, fn: (value: string, path: SecretPath) => string): Loose {
  const copy = JSON.parse(JSON.stringify(entry)) as Loose;
  for (const path of secretPaths(copy)) {
    let at: Loose = copy;
    for (const part of path.slice(0, -1)) at = at[part as string] as Loose;
    const last = path[path.length - 1] as string;
    at[last] = fn(at[last] as string, path);
  }
  return copy;
}

/** `entry` without the secret values that read {@link REDACTED} (as `GET /v1/catalog` showed them). */
function withoutRedacted(entry: Loose): Loose {
  const out: Loose = { ...entry };
  if (out.api_key === REDACTED) delete out.api_key;
  if (Array.isArray(out.api_keys) && out.api_keys.some((k) => (k as Loose)?.key === REDACTED)) delete out.api_keys;
  for (const group of ['headers', 'entra'] as const) {
    const g = out[group];
    if (g && typeof g === 'object') out[group] = Object.fromEntries(Object.entries(g as Loose).filter(([, v]) => v !== REDACTED));
  }
  return out;
}

/** The secret paths whose values differ between two entries (sealed values compared as stored): for the audit log, which never holds the values. */
export function changedSecrets(before: Loose | undefined, after: Loose | undefined): string[] {
  const values = (e: Loose | undefined) => {
    const m = new Map<string, string>();
    if (e) mapSecrets(e, (v, path) => (m.set(path.join('.'), v), v));
    return m;
  };
  const a = values(before);
  const b = values(after);
  return [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).sort();
}

/** What a redacted secret reads as in the API and the dashboard. */
export const REDACTED = '[redacted]';

/** `entry` with its secrets shown as {@link REDACTED}. */
export const redactSecrets = (entry: Loose): Loose => mapSecrets(entry, () => REDACTED);

/**
 * Refusals of an entry entered through the API that the config file may hold: what would let an
 * HTTP request read the host's environment or files, or start a process.
 * @returns `path: message` lines (empty: acceptable).
 */
export function apiEntryRefusals(kind: 'provider' | 'model', entry: Loose): string[] {
  const issues: string[] = [];
  const walk = (v: unknown, path: string) => {
    if (typeof v === 'string' && /\$\{/.test(v)) issues.push(`${path || '(entry)'}: \${VAR} is read from the environment only in the config file; enter the value itself`);
    else if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
  };
  walk(entry, '');
  if (kind !== 'provider') return issues;
  if (entry.kind === 'local') issues.push('kind: kind "local" runs an engine process on the host and is accepted from the config file only');
  // A preset's key default is `${VAR}`, read from the environment only in the file: the API needs the key itself.
  const preset = typeof entry.preset === 'string' ? (PROVIDER_PRESETS as Record<string, { key_env?: string }>)[entry.preset] : undefined;
  if (preset?.key_env && entry.api_key === undefined && entry.api_keys === undefined) issues.push(`api_key: preset "${String(entry.preset)}" takes its key from ${preset.key_env} in the config file only; through the API, enter api_key (it is stored encrypted)`);
  const headerCount = entry.headers && typeof entry.headers === 'object' ? Object.keys(entry.headers).length : 0;
  if (headerCount > MAX_API_HEADERS) issues.push(`headers: ${headerCount} headers; at most ${MAX_API_HEADERS} through the API`);
  const fileFields: [string, string][] = [['vertex', 'key_file'], ['entra', 'certificate_path'], ['entra', 'federated_token_file']];
  for (const [group, field] of fileFields) {
    const g = entry[group] as Loose | undefined;
    if (g && typeof g === 'object' && g[field] !== undefined) issues.push(`${group}.${field}: names a file on the host and is accepted from the config file only`);
  }
  return issues;
}

/**
 * A `PUT`'s entry completed from the stored one: secrets the body leaves out keep their stored
 * (sealed) values, so a change need not re-enter them; a secret set to `null` is removed.
 * `headers` is merged by name the same way.
 */
export function keepOmittedSecrets(given: Loose, stored: Loose | undefined): Loose {
  // A secret sent back as the API showed it (`[redacted]`) is the stored one, not a new value.
  const next = withoutRedacted(given);
  const out: Loose = { ...next };
  if (stored) {
    if (!('api_key' in next) && typeof stored.api_key === 'string' && !('api_keys' in next)) out.api_key = stored.api_key;
    if (!('api_keys' in next) && Array.isArray(stored.api_keys) && !('api_key' in next)) out.api_keys = stored.api_keys;
    if (stored.headers && typeof stored.headers === 'object') {
      const given = (next.headers ?? {}) as Loose;
      if (next.headers !== null) out.headers = { ...(stored.headers as Loose), ...given };
    }
    if (stored.entra && typeof stored.entra === 'object' && next.entra && typeof next.entra === 'object') {
      const e = { ...(next.entra as Loose) };
      for (const f of ['client_secret', 'certificate_password']) if (!(f in e) && typeof (stored.entra as Loose)[f] === 'string') e[f] = (stored.entra as Loose)[f];
      out.entra = e;
    }
  }
  // null removes: a secret, a header, the headers.
  for (const k of Object.keys(out)) if (out[k] === null) delete out[k];
  if (out.headers && typeof out.headers === 'object') out.headers = Object.fromEntries(Object.entries(out.headers as Loose).filter(([, v]) => v !== null));
  if (out.entra && typeof out.entra === 'object') out.entra = Object.fromEntries(Object.entries(out.entra as Loose).filter(([, v]) => v !== null));
  return out;
}
