#!/usr/bin/env node
import { secretBoxFromEnv, type SecretBox } from './util/secret-box.js';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { ConfigError, loadConfig, type LoadedConfig } from './config/load.js';
import { describePresetExpansions } from './config/provider-presets.js';
import { describeCredentialLines } from './config/credentials-schema.js';
import { buildGateway } from './server/app.js';
import { startTelemetry } from './telemetry/telemetry.js';
import { DEFAULT_DATABASE_URL, isDatabaseUnreachable, openDatabase, parseDatabaseUrl } from './store/database.js';
import { copyDatabase } from './store/copy-database.js';
import { createKey, deleteKey, listKeys, resolveKeyRef, updateKey } from './store/keys.js';
import { appendAudit, audited, keySnapshot, teamSnapshot, type AuditActor } from './store/audit-log.js';
import { createTeam, deleteTeam, keysByTeam, listTeams, resolveTeamRef, teamSettingsSchema } from './store/teams.js';
import { buildCatalog, unknownModelIds } from './routing/catalog.js';
import { keySettingsSchema, type KeySettings } from './store/key-settings.js';
import { prestartLocalEngines, retainLocalEngines, withEngineContext, withLocalModel } from './providers/local/local-models.js';
import { describeMissingModelFile, missingLocalModelFiles } from './providers/local/local-model-files.js';
import { setLocalEngineLogger, stopLocalEngines } from './providers/local/engine-supervisor.js';
import { migrate } from './store/migrations.js';
import { asyncLogDestination, flushLog } from './util/log-destination.js';
import { RedisConnection } from './redis/redis-connection.js';
import { RedisKeyChangeNotifier } from './store/key-change-notifier.js';
import { isWorker, parseWorkers, runPrimary, WORKER_INDEX_ENV, workersProblem } from './serve-workers.js';

const USAGE = `opinference — self-hostable OpenAI-compatible LLM gateway

Usage:
  opinference serve [--config FILE] [--workers N|auto]
                                             start the gateway (default command); --workers runs N
                                             processes on one port (auto: one per core; needs OP_REDIS_URL)
  opinference keys create --name NAME [--limit USD] [--limit-reset daily|weekly|monthly|never]
                         [--rpm N] [--tpm N] [--models a/b,c/d] [--retention none|DAYS]
                         [--tools srv__tool,srv2,srv3__get_*] [--max-tools N] [--mcp-calls-per-minute N]
                         [--expires-in-days N] [--team ID_OR_NAME]
                                             create a key; its secret is printed once
  opinference keys list                      list keys (never their secrets)
  opinference keys disable ID_OR_NAME        disable a key (a name shared by several keys is refused)
  opinference keys delete ID_OR_NAME         delete a key (its generations stay)
  opinference teams create --name NAME [--limit USD] [--limit-reset …] [--rpm N] [--tpm N]
                         [--models a/b,c/d] [--retention none|DAYS]
                                             create a team (a budget and limits over its keys)
  opinference teams list                     list teams with their keys
  opinference teams delete ID_OR_NAME        delete a team (its keys stay, without a team)
  opinference migrate                        create or update the database schema (OP_DATABASE_URL)
  opinference migrate --from URL --to URL [--resume]
                                             copy a deployment, e.g. --from sqlite:./data/opinference.db
                                             --to postgres://user@host/db (into an empty database;
                                             --resume continues an interrupted copy)
  opinference config check [--config FILE]   validate the config file, report every problem, exit;
                                             show what each provider preset expanded to
  opinference --version                      print the version

Commands that use the database print which one on stderr. \`keys create --models\` takes
model ids of the config's catalog (--config, OP_CONFIG or ./opinference.yaml).

Environment:
  OP_CONFIG        config file (default ./opinference.yaml)
  OP_PORT          port (default 8080)        OP_HOST  address (default 0.0.0.0)
  OP_DATABASE_URL  postgres://user:password@host:port/db, or sqlite:<path> (also sqlite:///abs/path,
                   file:<path>; default ${DEFAULT_DATABASE_URL})
  OP_ADMIN_KEY     a key with access to everything
  OP_REDIS_URL     redis://… to share key limits, endpoint health and key changes across
                   replicas and workers (default: in-process)
  OP_REDIS_PREFIX  prefix of the gateway's Redis keys and channels (default op:)
  OP_LOG_LEVEL     trace|debug|info|warn|error (default info)
  OP_LOCAL_MODEL   a GGUF file or hf: URI served as local/<name> when there is no config file
  OTEL_EXPORTER_OTLP_ENDPOINT  export traces and metrics over OTLP/HTTP (see docs/observability.md)
`;

/** The package version (package.json next to dist/ or src/). */
function version(): string {
  for (const rel of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'opinference' && pkg.version) return pkg.version;
    } catch {
      // not there: try the next
    }
  }
  return 'unknown';
}

/** A database location for display: no password of a connection URL. */
const displayLocation = (location: string): string => location.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');

function fail(message: string): never {
  process.stderr.write(`opinference: ${message}\n`);
  process.exit(1);
}

function configPath(flag: string | undefined): { path: string; explicit: boolean } {
  if (flag) return { path: flag, explicit: true };
  if (process.env.OP_CONFIG) return { path: process.env.OP_CONFIG, explicit: true };
  return { path: 'opinference.yaml', explicit: false };
}

/**
 * The config `serve` would load. `secrets: false` (key commands, which only need the catalog):
 * the providers' `api_key` and `headers` are not read, so their variables need not be set.
 */
function readConfig(flag: string | undefined, options: { secrets?: boolean } = {}): LoadedConfig {
  const { path, explicit } = configPath(flag);
  try {
    return withLocalModel(loadConfig(path, { required: explicit, secrets: options.secrets }));
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

/** Say on stderr which database a command uses (stdout stays the command's result). */
function announceDatabase(location: string): void {
  process.stderr.write(`database: ${displayLocation(location)} (${process.env.OP_DATABASE_URL ? 'OP_DATABASE_URL' : 'default; set OP_DATABASE_URL to change'})\n`);
}

async function withDatabase<T>(fn: (db: ReturnType<typeof openDatabase>['db']) => Promise<T>): Promise<T> {
  const url = process.env.OP_DATABASE_URL || DEFAULT_DATABASE_URL;
  const store = openDatabase(url);
  announceDatabase(store.location);
  try {
    await migrate(store.db);
    return await fn(store.db);
  } finally {
    await store.close();
  }
}

/**
 * After `keys disable|delete`: with OP_REDIS_URL, tell running gateways to forget their cached
 * keys now (else the change takes effect within their key cache's expiry, 5 s).
 */
async function announceKeyChange(): Promise<void> {
  const url = process.env.OP_REDIS_URL;
  if (!url) return;
  const quiet = { error() {}, warn() {}, info() {} };
  const redis = new RedisConnection(url, { commandTimeoutMs: 2000, connectTimeoutMs: 2000 }, quiet, process.env.OP_REDIS_PREFIX || undefined);
  try {
    await redis.waitUntilReady();
    await new RedisKeyChangeNotifier(redis).announce();
  } catch (err) {
    process.stderr.write(`could not notify running gateways through Redis (${err instanceof Error ? err.message : String(err)}): the change takes effect within 5 s\n`);
  } finally {
    await redis.close();
  }
}

/**
 * `serve` at start: migrate, waiting for a database that cannot be reached yet (PostgreSQL
 * restarting, started after the gateway) with retries 1 s … 10 s apart, each said on stderr, so
 * that a replica or `--workers` worker started during an outage waits instead of exiting (and
 * being restarted in a loop). Any other error (a refused login, a failed migration) is thrown.
 */
async function migrateWhenReachable(db: ReturnType<typeof openDatabase>['db'], location: string): Promise<void> {
  for (let delay = 1_000; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      await migrate(db);
      return;
    } catch (err) {
      if (!isDatabaseUnreachable(err)) throw err;
      process.stderr.write(`opinference: the database ${displayLocation(location)} cannot be reached yet (${(err as { code?: string }).code ?? 'error'}); retrying in ${delay / 1000} s: ${(err as Error).message}\n`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function serve(flag: string | undefined, workersFlag?: string): Promise<void> {
  const loaded = readConfig(flag);
  // A malformed OP_CATALOG_SECRET_KEY stops the start (a typo must not leave secrets unreadable later).
  let secretBox: SecretBox | undefined;
  try {
    secretBox = secretBoxFromEnv();
  } catch (err) {
    fail((err as Error).message);
  }
  if (!isWorker()) {
    // A malformed OP_DATABASE_URL stops the primary at once, before any worker starts.
    parseDatabaseUrl(process.env.OP_DATABASE_URL || DEFAULT_DATABASE_URL);
    let workers: number;
    try {
      workers = parseWorkers(workersFlag);
    } catch (err) {
      fail((err as Error).message);
    }
    const problem = workersProblem(workers, process.env.OP_REDIS_URL || undefined);
    if (problem) fail(problem);
    if (workers > 1) return runPrimary(workers);
  }
  const store = openDatabase(process.env.OP_DATABASE_URL || DEFAULT_DATABASE_URL);
  await migrateWhenReachable(store.db, store.location);
  const telemetry = await startTelemetry(process.env, loaded.config.telemetry);
  const logDestination = asyncLogDestination();
  let gateway: ReturnType<typeof buildGateway>;
  try {
    gateway = buildGateway({
      loaded,
      db: store.db,
      telemetry,
      adminKey: process.env.OP_ADMIN_KEY || undefined,
      redisUrl: process.env.OP_REDIS_URL || undefined,
      redisPrefix: process.env.OP_REDIS_PREFIX || undefined,
      secretBox,
      // With SQLite (one machine), background jobs run in the first worker only; PostgreSQL elects one process per fleet.
      purgeIntervalMs: store.dialect === 'sqlite' && Number(process.env[WORKER_INDEX_ENV] || 0) > 0 ? 0 : undefined,
      // Asynchronous: a slow or full log file never blocks requests, records or shutdown.
      logger: { level: process.env.OP_LOG_LEVEL || 'info', redact: ['req.headers.authorization', 'headers.authorization'], stream: logDestination.stream },
    });
  } catch (err) {
    // dashboard.oidc without its secrets in the environment: a clear message, no stack.
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  if (store.location !== ':memory:') gateway.runtime().writer.watchFile(store.location);
  const log = gateway.app.log;
  if (!loaded.source && !process.env.OP_LOCAL_MODEL) log.warn({ path: configPath(flag).path }, 'no config file found: serving an empty catalog; see examples/opinference.yaml');
  else if (!loaded.source) log.info({ model: loaded.config.models[0]?.id }, 'no config file: serving OP_LOCAL_MODEL');
  else log.info({ path: loaded.source, models: loaded.config.models.length, providers: loaded.config.providers.length }, 'config loaded');
  for (const warning of loaded.warnings ?? []) log.warn({ path: loaded.source }, `config: ${warning}`);
  if (telemetry) log.info({ traces: Boolean(process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) }, 'OpenTelemetry export on (OTEL_EXPORTER_OTLP_*)');
  const port = Number(process.env.OP_PORT || 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`OP_PORT must be a port number, got "${process.env.OP_PORT}"`);
  const host = process.env.OP_HOST || '0.0.0.0';
  // server.listen_backlog: a burst of connections waits in the kernel's queue instead of being reset.
  await gateway.app.listen({ port, host, backlog: loaded.config.server.listen_backlog });
  log.info({ database: store.location }, 'database ready');
  setLocalEngineLogger(log);
  void prestartLocalEngines(loaded.config).then(() => {
    // OP_LOCAL_MODEL: the catalog shows the context the engine really runs.
    const next = withEngineContext(loaded);
    if (!next || gateway.fileConfig() !== loaded) return; // (a reload since then wins)
    gateway.reload(next);
    log.info({ model: next.config.models[0]?.id, context_length: next.config.models[0]?.context_length, requested: loaded.config.models[0]?.context_length }, 'OP_LOCAL_MODEL: context_length set to what the engine runs (capped at the model\'s trained context)');
  });

  let stopping = false;
  // The config as of the last SIGHUP reload (what the audit row's `before` shows).
  let current: LoadedConfig = loaded;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const drainMs = gateway.runtime().config.server.drain_timeout_ms;
    log.info({ signal, drainMs }, 'draining: no new requests; waiting for in-flight ones');
    const timer = setTimeout(() => {
      log.warn({ inFlight: gateway.runtime().inFlight }, 'drain timeout reached: ending the remaining streams with an error chunk, then closing connections');
      gateway.runtime().shutdown.abort();
      setTimeout(() => gateway.app.server.closeAllConnections(), 500).unref();
    }, drainMs);
    timer.unref();
    // Whatever hangs (a dead disk under the database), the process ends.
    setTimeout(() => {
      process.stderr.write('opinference: shutdown did not finish in time; exiting\n');
      process.exit(1);
    }, drainMs + 15_000).unref();
    try {
      await gateway.close();
      await stopLocalEngines();
      await store.close();
      log.info('stopped');
      // The last lines reach the log before the exit (bounded: a stuck pipe does not hold it).
      await flushLog(logDestination.stream);
      process.exit(0);
    } catch (err) {
      log.error({ err }, 'error while stopping');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGHUP', () => {
    const { path, explicit } = configPath(flag);
    try {
      const next = withLocalModel(loadConfig(path, { required: explicit || loaded.source !== null }));
      const before = configSummary(current);
      gateway.reload(next);
      current = next;
      void appendAudit(store.db, { type: 'system', id: 'SIGHUP' }, { action: 'config.reload', targetType: 'config', targetId: path, before, after: configSummary(next) }).catch((err: unknown) => log.error({ err: err instanceof Error ? err.message : err }, 'config reload: the audit row could not be written'));
      retainLocalEngines(next.config);
      log.info({ path, models: next.config.models.length }, 'config reloaded');
    } catch (err) {
      log.error({ err: err instanceof Error ? err.message : err }, 'config reload refused; the previous config keeps serving');
    }
  });
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      name: { type: 'string' },
      'expires-in-days': { type: 'string' },
      limit: { type: 'string' },
      'limit-reset': { type: 'string' },
      rpm: { type: 'string' },
      tpm: { type: 'string' },
      models: { type: 'string' },
      tools: { type: 'string' },
      'max-tools': { type: 'string' },
      'mcp-calls-per-minute': { type: 'string' },
      retention: { type: 'string' },
      team: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      resume: { type: 'boolean' },
      workers: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  const [command = 'serve', sub] = positionals;
  if (values.help || command === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  if (values.version || command === 'version') {
    process.stdout.write(`opinference ${version()}\n`);
    return;
  }
  switch (command) {
    case 'serve':
      return serve(values.config, values.workers);
    case 'migrate':
      return migrateCommand(values);
    case 'config': {
      if (sub !== 'check') fail('usage: opinference config check [--config FILE]');
      const loaded = readConfig(values.config);
      const missing = missingLocalModelFiles(loaded.config);
      if (missing.length > 0) fail(missing.map((m) => `${loaded.source ?? 'OP_LOCAL_MODEL'}: ${loaded.source ? `${m.at}: ` : ''}${describeMissingModelFile(m)}`).join('\n'));
      // Warnings (a credential an empty default left empty) go to stderr; the file is still valid.
      const warnings = loaded.warnings ?? [];
      for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
      const warned = warnings.length ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'} on stderr)` : '';
      process.stdout.write(`${loaded.source ?? '(no file: empty catalog)'}: ok — ${loaded.config.providers.length} providers, ${loaded.config.models.length} models${mcpCount(loaded.config.mcp_servers)}${warned}\n`);
      // What each provider preset expanded to (the key as set / not set, never its value).
      for (const line of describePresetExpansions(loaded.config)) process.stdout.write(`  ${line}\n`);
      // Providers with several keys: labels and weights, never the values.
      for (const line of describeCredentialLines(loaded.config.providers)) process.stdout.write(`  ${line}\n`);
      return;
    }
    case 'teams':
      return teamsCommand(sub, positionals[2], values);
    case 'keys':
      // An AmbiguousKeyError (a name shared by several keys) ends in fail() with its message, like any error.
      return keysCommand(sub, positionals[2], values);
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

/**
 * `opinference migrate`: apply the schema steps to OP_DATABASE_URL; with `--from` and `--to`,
 * copy a whole deployment from one database to another (both migrated first).
 */
async function migrateCommand(values: { from?: string; to?: string; resume?: boolean }): Promise<void> {
  if (values.from === undefined && values.to === undefined) {
    // Not withDatabase: it migrates before running its function, which would then find nothing to do.
    const store = openDatabase(process.env.OP_DATABASE_URL || DEFAULT_DATABASE_URL);
    announceDatabase(store.location);
    try {
      const applied = await migrate(store.db);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    } finally {
      await store.close();
    }
    return;
  }
  if (!values.from || !values.to) fail('usage: opinference migrate --from sqlite:<file> --to postgres://user@host/db [--resume]');
  if (values.from === values.to) fail('--from and --to name the same database');
  const source = openDatabase(values.from, { existing: true });
  const target = openDatabase(values.to);
  try {
    process.stderr.write(`copying ${source.location} (${source.dialect}) to ${target.location} (${target.dialect})\n`);
    let shown = 0;
    const copied = await copyDatabase(source.db, target.db, {
      resume: values.resume === true,
      onProgress: (table, n, total) => {
        if (n === total || Date.now() - shown > 2_000) {
          shown = Date.now();
          process.stderr.write(`  ${table}: ${n}/${total}\n`);
        }
      },
    });
    for (const [table, n] of Object.entries(copied)) process.stdout.write(`${table}\t${n}\n`);
    process.stdout.write('copied; point OP_DATABASE_URL at the target and start the gateways\n');
  } finally {
    await source.close();
    await target.close();
  }
}

type KeyFlags = { config?: string; name?: string; 'expires-in-days'?: string; limit?: string; 'limit-reset'?: string; rpm?: string; tpm?: string; models?: string; tools?: string; 'max-tools'?: string; 'mcp-calls-per-minute'?: string; retention?: string; team?: string };

/**
 * The ids of `--models a/b,c/d`. A list that names no model (`""`, `" "`, `","`) is refused:
 * an empty `allowed_models` means "every model", so accepting it would fail open.
 */
function modelList(flag: string): string[] {
  const ids = flag.split(',').map((m) => m.trim()).filter(Boolean);
  if (ids.length === 0) fail(`--models ${JSON.stringify(flag)} names no model; give model ids (--models a/b,c/d), or leave --models out to allow every model`);
  return ids;
}

/** `, 2 MCP servers (weather: streamable_http, files: stdio)` for `config check`, or '' without any. */
function mcpCount(servers: readonly { id: string; transport: string }[]): string {
  if (servers.length === 0) return '';
  return `, ${servers.length} MCP server${servers.length === 1 ? '' : 's'} (${servers.map((s) => `${s.id}: ${s.transport}`).join(', ')})`;
}

/**
 * The MCP tool patterns of `--tools a__b,c`. A list that names none is refused, like
 * `--models`: an empty `allowed_tools` means "every tool".
 */
function toolList(flag: string): string[] {
  const patterns = flag.split(',').map((t) => t.trim()).filter(Boolean);
  if (patterns.length === 0) fail(`--tools ${JSON.stringify(flag)} names no tool; give patterns (--tools weather,github__search_*), or leave --tools out to allow every tool`);
  return patterns;
}

/** Key settings from CLI flags, validated like the admin API's. */
function settingsFromFlags(values: KeyFlags): Partial<KeySettings> {
  const int = (flag: string, v: string | undefined) => {
    if (v === undefined) return null;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) fail(`--${flag} must be a positive whole number`);
    return n;
  };
  const raw = {
    limit: values.limit ?? null,
    limit_reset: values['limit-reset'] ?? 'never',
    rate_limit: { requests_per_minute: int('rpm', values.rpm), tokens_per_minute: int('tpm', values.tpm) },
    allowed_models: values.models === undefined ? [] : modelList(values.models),
    allowed_tools: values.tools === undefined ? [] : toolList(values.tools),
    max_tools: int('max-tools', values['max-tools']),
    mcp_calls_per_minute: int('mcp-calls-per-minute', values['mcp-calls-per-minute']),
    retention: values.retention === undefined ? null : values.retention === 'none' ? 'none' : Number(values.retention),
  };
  const parsed = keySettingsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    fail(`--${String(issue.path[0]).replace(/_/g, '-')}: ${issue.message}`);
  }
  if (parsed.data.allowed_models.length > 0) {
    // Checked against the catalog `serve` would load: a typo would otherwise allow nothing.
    // Only the catalog is needed: the providers' secrets are not read (nor need to be set).
    const loaded = readConfig(values.config, { secrets: false });
    const catalog = buildCatalog(loaded.config);
    const unknown = unknownModelIds(parsed.data.allowed_models, catalog);
    if (unknown.length > 0) {
      const known = [...catalog.models.keys()].join(', ') || 'none';
      fail(`--models: no model ${unknown.map((u) => JSON.stringify(u.id)).join(', ')} in the catalog of ${loaded.source ?? '(no config file)'} (known: ${known})`);
    }
  }
  return parsed.data;
}

/** The CLI as an audit actor: `<os user>@<host>`. */
function cliActor(): AuditActor {
  let user = process.env.USER ?? 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry for the uid (a container): $USER, else unknown
  }
  return { type: 'cli', id: `${user}@${hostname()}` };
}

/** What the audit log keeps of a config: where it came from and its catalog's ids (never a provider's key). */
function configSummary(loaded: LoadedConfig) {
  return { source: loaded.source, providers: loaded.config.providers.map((p) => p.id), models: loaded.config.models.map((m) => m.id), alert_webhooks: loaded.config.alerts.webhooks.map((w) => w.id) };
}

/** `opinference teams create|list|delete`: the `/v1/teams` API's changes from the shell, audited as the CLI. */
async function teamsCommand(sub: string | undefined, arg: string | undefined, values: KeyFlags): Promise<void> {
  switch (sub) {
    case 'create': {
      const name = values.name ?? arg;
      if (!name) fail('usage: opinference teams create --name NAME');
      const s = settingsFromFlags(values);
      const settings = teamSettingsSchema.parse({ limit: s.limit, limit_reset: s.limit_reset, rate_limit: s.rate_limit, allowed_models: s.allowed_models, retention: s.retention });
      const team = await withDatabase(async (db) => {
        const taken = (await listTeams(db)).find((t) => t.name === name);
        if (taken) fail(`--name: a team is already named "${name}" (${taken.id})`);
        return audited(db, cliActor(), async (trx) => {
          const made = await createTeam(trx, name, settings);
          return { result: made, change: { action: 'team.create', targetType: 'team', targetId: made.id, before: null, after: teamSnapshot(made) } };
        });
      });
      process.stdout.write(`${team.id}\n`);
      process.stderr.write(`created team ${team.id} (${team.name})\n`);
      return;
    }
    case 'list': {
      const [teams, members] = await withDatabase(async (db) => Promise.all([listTeams(db), keysByTeam(db)]));
      if (teams.length === 0) process.stdout.write('no teams; create one with: opinference teams create --name NAME\n');
      for (const t of teams) {
        const s = t.settings;
        const limits = [s.limit !== null ? `limit $${s.limit}/${s.limit_reset}` : 'no limit', s.rate_limit.requests_per_minute ? `${s.rate_limit.requests_per_minute} rpm` : '', s.rate_limit.tokens_per_minute ? `${s.rate_limit.tokens_per_minute} tpm` : ''].filter(Boolean).join(', ');
        process.stdout.write(`${t.id}\t${t.name}\t${limits}\t${(members.get(t.id) ?? []).length} keys\n`);
      }
      return;
    }
    case 'delete': {
      if (!arg) fail('usage: opinference teams delete ID_OR_NAME');
      const deleted = await withDatabase(async (db) => {
        const team = await resolveTeamRef(db, arg);
        if (!team) return undefined;
        return audited(db, cliActor(), async (trx) => {
          const n = await deleteTeam(trx, team.id);
          return { result: n === undefined ? undefined : { team, detached: n }, change: n === undefined ? undefined : { action: 'team.delete', targetType: 'team', targetId: team.id, before: { ...teamSnapshot(team), keys_detached: n }, after: null } };
        });
      });
      if (!deleted) fail(`no team with id or name "${arg}"`);
      process.stdout.write(`deleted team ${deleted.team.id} (${deleted.team.name}); ${deleted.detached} key(s) left without a team\n`);
      await announceKeyChange();
      return;
    }
    default:
      fail('usage: opinference teams create|list|delete');
  }
}

async function keysCommand(sub: string | undefined, arg: string | undefined, values: KeyFlags): Promise<void> {
  switch (sub) {
    case 'create': {
      const name = values.name ?? arg;
      if (!name) fail('usage: opinference keys create --name NAME');
      let expiresAt: number | null = null;
      if (values['expires-in-days'] !== undefined) {
        const days = Number(values['expires-in-days']);
        if (!(days > 0)) fail('--expires-in-days must be a positive number');
        expiresAt = Date.now() + days * 86_400_000;
      }
      const settings = settingsFromFlags(values);
      const team = values.team;
      const { key, secret } = await withDatabase(async (db) => {
        const teamId = team === undefined ? null : ((await resolveTeamRef(db, team))?.id ?? fail(`--team: no team with id or name "${team}" (create it with POST /v1/teams)`));
        return audited(db, cliActor(), async (trx) => {
          const made = await createKey(trx, name, expiresAt, settings, teamId);
          return { result: made, change: { action: 'key.create', targetType: 'key', targetId: made.key.id, before: null, after: keySnapshot(made.key) } };
        });
      });
      // stdout carries the secret alone (`K=$(opinference keys create --name x)`); the rest is for the operator.
      process.stderr.write(`created key ${key.id} (${key.name}); its secret is on stdout, shown once: store it now\n`);
      process.stdout.write(`${secret}\n`);
      return;
    }
    case 'list': {
      const keys = await withDatabase((db) => listKeys(db));
      if (keys.length === 0) process.stdout.write('no keys; create one with: opinference keys create --name NAME\n');
      for (const k of keys) {
        const s = k.settings;
        const limits = [s.limit !== null ? `limit $${s.limit}/${s.limit_reset}` : 'no limit', s.rate_limit.requests_per_minute ? `${s.rate_limit.requests_per_minute} rpm` : '', s.rate_limit.tokens_per_minute ? `${s.rate_limit.tokens_per_minute} tpm` : '', s.mcp_calls_per_minute ? `${s.mcp_calls_per_minute} MCP calls/min` : ''].filter(Boolean).join(', ');
        const team = k.team ? `\tteam ${k.team.name}` : '';
        process.stdout.write(`${k.id}\t${k.name}\t${k.prefix}…\t${k.disabled ? 'disabled' : k.expiresAt !== null && k.expiresAt <= Date.now() ? 'expired' : 'active'}\t${limits}\t${new Date(k.createdAt).toISOString()}${team}\n`);
      }
      return;
    }
    case 'disable': {
      if (!arg) fail('usage: opinference keys disable ID_OR_NAME');
      const n = await withDatabase(async (db) => {
        const key = await resolveKeyRef(db, arg);
        if (!key) return 0;
        return audited(db, cliActor(), async (trx) => {
          const after = await updateKey(trx, key.id, { disabled: true });
          return { result: after ? 1 : 0, change: after && { action: 'key.disable', targetType: 'key', targetId: key.id, before: keySnapshot(key), after: keySnapshot(after) } };
        });
      });
      if (n === 0) fail(`no key with id or name "${arg}"`);
      process.stdout.write(`disabled ${n} key(s)\n`);
      await announceKeyChange();
      return;
    }
    case 'delete': {
      if (!arg) fail('usage: opinference keys delete ID_OR_NAME');
      const deleted = await withDatabase(async (db) => {
        const key = await resolveKeyRef(db, arg);
        if (!key) return undefined;
        return audited(db, cliActor(), async (trx) => {
          const ok = await deleteKey(trx, key.id);
          return { result: ok ? key : undefined, change: ok ? { action: 'key.delete', targetType: 'key', targetId: key.id, before: keySnapshot(key), after: null } : undefined };
        });
      });
      if (!deleted) fail(`no key with id or name "${arg}"`);
      process.stdout.write(`deleted key ${deleted.id} (${deleted.name})\n`);
      await announceKeyChange();
      return;
    }
    default:
      fail('usage: opinference keys create|list|disable|delete');
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  fail(err instanceof Error ? err.message : String(err));
});
