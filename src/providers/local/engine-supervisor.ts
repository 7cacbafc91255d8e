import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { GatewayError } from '../../errors/gateway-error.js';
import { ENGINE_CONFIG_ENV, type EngineInfo, type EngineMessage, type EngineStartConfig, type SupervisorMessage } from './engine-protocol.js';
import { isModelUri } from './local-settings.js';

/**
 * The gateway side of the `local` provider: one supervisor per (provider, model source) owns
 * one engine process — a child process that loads the GGUF model with node-llama-cpp and serves
 * an OpenAI-compatible API on 127.0.0.1. The gateway's event loop never runs inference and
 * never loads node-llama-cpp; a crashing engine takes only itself down.
 *
 * Lifecycle: started on first use (or by {@link prestartLocalEngines}); a request that finds
 * the engine starting for the first time waits for it (up to `load_wait_ms`); an engine that
 * exits unexpectedly is restarted at once, then with a growing delay if it keeps failing, and
 * meanwhile requests fail fast with a retryable error so the router moves on. An engine that
 * cannot start for a reason a restart would repeat (its model file is missing or cannot be
 * loaded, node-llama-cpp is not installed) is `failed`: no restart loop; requests fail at once
 * with the terminal `provider_misconfigured` until the model file changes, then it starts again
 * (an `hf:` or URL source, with no file to watch: on the next request a minute later).
 */

/**
 * Lifecycle state of one engine. `failed`: a terminal start failure (see
 * {@link EngineStatus.lastError}); it is tried again only once the model file changes.
 */
export type EngineState = 'idle' | 'starting' | 'ready' | 'restarting' | 'failed' | 'stopped';

/** A snapshot of one engine, for operators and tests. */
export interface EngineStatus {
  providerId: string;
  source: string;
  state: EngineState;
  /** Process id of the current engine process, or null. */
  pid: number | null;
  /** Engine processes that exited unexpectedly or failed to start, since this supervisor was created. */
  failures: number;
  lastError: string | null;
  info: EngineInfo | null;
}

/** Where to reach a ready engine. */
export interface EngineEndpoint {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** Bearer token the engine requires. */
  token: string;
}

/** A minimal structured logger (pino-compatible subset). */
export interface EngineLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}

/** Default logger: one JSON line per event on stderr (the gateway's stdout carries its own logs). */
const stderrLogger: EngineLogger = {
  info: (obj, msg) => writeLog(30, obj, msg),
  warn: (obj, msg) => writeLog(40, obj, msg),
  error: (obj, msg) => writeLog(50, obj, msg),
};

function writeLog(level: number, obj: Record<string, unknown>, msg: string): void {
  process.stderr.write(`${JSON.stringify({ level, time: Date.now(), name: 'local-engine', ...obj, msg })}\n`);
}

let logger: EngineLogger = stderrLogger;

/** Send engine lifecycle logs to the gateway's logger (e.g. `app.log`) instead of stderr. */
export function setLocalEngineLogger(next: EngineLogger): void {
  logger = next;
}

/** Restart delays after consecutive failures: 0 for the first, then doubling up to 30 s. */
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** An engine that served this long before failing counts as stable: the next restart is immediate. */
const STABLE_AFTER_MS = 60_000;
/** How long a shutting-down engine may take before it is killed. */
const SHUTDOWN_GRACE_MS = 5_000;
/** Download progress is logged at most this often. */
const PROGRESS_LOG_MS = 5_000;
/** A download source (no file to watch) that failed for good is tried again on demand after this long. */
const FAILED_URI_RETRY_MS = 60_000;

/**
 * What the model file looks like now (size and modification time), `missing`, or null for a
 * download source (`hf:`, `https:`): a terminal failure is retried once this changes.
 */
function modelFileStamp(source: string): string | null {
  if (isModelUri(source)) return null;
  try {
    const st = statSync(source);
    return st.isFile() ? `${st.size}:${st.mtimeMs}` : 'not a file';
  } catch {
    return 'missing';
  }
}

/** The engine entry point next to this file (`.ts` under tsx, `.js` from dist/), and how to run it. */
function workerEntry(): { file: string; execArgv: string[] } {
  const here = fileURLToPath(import.meta.url);
  const ext = path.extname(here);
  const file = path.join(path.dirname(here), `engine-worker${ext}`);
  // Running from TypeScript sources (tests, bench): the child needs tsx's loader too.
  const execArgv = ext === '.ts' ? ['--import', import.meta.resolve('tsx')] : [];
  return { file, execArgv };
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(err: Error): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // a start nobody waits for must not be an unhandled rejection
  return { promise, resolve, reject };
}

/** Owns one engine process: starts, watches, restarts and stops it. */
export class EngineSupervisor {
  readonly settingsKey: string;
  private child: ChildProcess | null = null;
  private token = '';
  private info: EngineInfo | null = null;
  private readyAt = 0;
  private start: Deferred<EngineInfo> | null = null;
  /** True after a failure until the next engine is ready: requests fail fast meanwhile. */
  private degraded = false;
  private failuresInRow = 0;
  private failures = 0;
  private lastError: string | null = null;
  private restartTimer: NodeJS.Timeout | undefined;
  private isStopped = false;
  private lastProgressLog = 0;
  /** What the current engine process reported before failing, if it did. */
  private fatalMessage: string | null = null;
  private fatalTerminal = false;
  /** Set by a terminal failure: the model file's stamp then (see {@link modelFileStamp}). */
  private failedWithFile: string | null | undefined = undefined;
  private failedAt = 0;

  constructor(
    readonly config: Omit<EngineStartConfig, 'token'>,
    private readonly loadWaitMs: number,
  ) {
    this.settingsKey = JSON.stringify(config);
  }

  /** Whether {@link stop} was called (a replaced or shut-down engine). */
  get stopped(): boolean {
    return this.isStopped;
  }

  /** Current state, for status pages and tests. */
  status(): EngineStatus {
    let state: EngineState;
    if (this.isStopped) state = 'stopped';
    else if (this.info) state = 'ready';
    else if (this.failedWithFile !== undefined) state = 'failed';
    else if (this.degraded) state = 'restarting';
    else if (this.child || this.start) state = 'starting';
    else state = 'idle';
    return {
      providerId: this.config.providerId,
      source: this.config.source,
      state,
      pid: this.child?.pid ?? null,
      failures: this.failures,
      lastError: this.lastError,
      info: this.info,
    };
  }

  /** The engine's address if it is ready now, else null (and a start is begun if none is under way). */
  readyEndpoint(): EngineEndpoint | null {
    if (this.info) return { origin: this.info.origin, token: this.token };
    this.ensureStarting();
    return null;
  }

  /**
   * The engine's address, starting it if needed.
   * @throws GatewayError `provider_misconfigured` (terminal) while the engine is `failed`;
   *   `upstream_connection_failed` (retryable) while it restarts after a failure;
   *   `upstream_overloaded` when it is still loading after `load_wait_ms`.
   */
  async endpoint(): Promise<EngineEndpoint> {
    const ready = this.readyEndpoint();
    if (ready) return ready;
    if (this.isStopped) throw this.unavailable('the local engine was stopped (configuration reloaded or gateway closing)');
    if (this.failedWithFile !== undefined) throw this.misconfigured();
    if (this.degraded) throw this.unavailable(`the local engine is restarting after a failure: ${this.lastError ?? 'unknown error'}`);
    const start = this.start;
    if (!start) throw this.unavailable('the local engine is not running');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new GatewayError('upstream_overloaded', `${this.config.providerId}: the local engine is still loading ${this.config.source} after ${this.loadWaitMs} ms`, {
        retryAfterSeconds: 5,
        metadata: { provider: this.config.providerId },
      })), this.loadWaitMs);
    });
    try {
      await Promise.race([start.promise, timeout]);
    } catch (err) {
      if (err instanceof GatewayError) throw err;
      if (this.failedWithFile !== undefined) throw this.misconfigured();
      throw this.unavailable(`the local engine failed to start: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    if (!this.info) throw this.unavailable('the local engine stopped right after starting');
    return { origin: this.info.origin, token: this.token };
  }

  /** Resolves once the engine is ready (starting it if needed); rejects if this start fails. */
  async whenReady(): Promise<EngineInfo> {
    if (this.info) return this.info;
    this.ensureStarting();
    if (this.failedWithFile !== undefined) throw new Error(this.lastError ?? 'the local engine cannot start');
    if (!this.start) throw new Error(this.lastError ?? 'the local engine is not starting');
    return this.start.promise;
  }

  /** The terminal error of a `failed` engine. The client sees the file's name only; /ready and the log have the path. */
  private misconfigured(): GatewayError {
    return new GatewayError('provider_misconfigured', `${this.config.providerId}: the local engine cannot start: its model file ${path.basename(this.config.source)} is missing or cannot be loaded; an operator must fix it (see /ready)`, {
      metadata: { provider: this.config.providerId },
    });
  }

  private unavailable(message: string): GatewayError {
    return new GatewayError('upstream_connection_failed', `${this.config.providerId}: ${message}`, {
      retryAfterSeconds: 1,
      metadata: { provider: this.config.providerId, local_engine: this.config.source },
    });
  }

  private ensureStarting(): void {
    if (this.isStopped || this.child || this.restartTimer) return;
    if (this.failedWithFile !== undefined) {
      // Failed for good with this file: try again only once the file changed (a download
      // source, with no file to watch: on demand, at most once a minute).
      const stamp = modelFileStamp(this.config.source);
      if (stamp === null ? Date.now() - this.failedAt < FAILED_URI_RETRY_MS : stamp === this.failedWithFile) return;
      this.failedWithFile = undefined;
      this.failuresInRow = 0;
    }
    this.spawn();
  }

  private spawn(): void {
    const start = this.start ?? deferred<EngineInfo>();
    this.start = start;
    // A model file that is not there: fail now, without a process that would fail the same way.
    if (modelFileStamp(this.config.source) === 'missing') {
      this.onFailure(null, `model file not found: ${this.config.source}`, true);
      return;
    }
    const { file, execArgv } = workerEntry();
    this.token = randomBytes(24).toString('base64url');
    this.fatalMessage = null;
    this.fatalTerminal = false;
    const startConfig: EngineStartConfig = { ...this.config, token: this.token };
    logger.info({ provider: this.config.providerId, source: this.config.source }, 'starting the local engine');
    let child: ChildProcess;
    try {
      child = fork(file, [], {
        execArgv,
        env: { ...process.env, [ENGINE_CONFIG_ENV]: JSON.stringify(startConfig) },
        // The engine's own output (llama.cpp warnings, a download progress bar) goes to our stderr.
        stdio: ['ignore', 2, 2, 'ipc'],
        serialization: 'json',
      });
    } catch (err) {
      this.onFailure(null, `could not start the engine process: ${(err as Error).message}`);
      return;
    }
    this.child = child;
    child.on('message', (msg: EngineMessage) => this.onMessage(child, msg));
    child.on('error', (err) => this.onFailure(child, `engine process error: ${err.message}`));
    child.on('exit', (code, signal) => {
      if (this.child !== child) return;
      this.onFailure(child, this.fatalMessage ?? `the engine process exited (${signal ?? `code ${code}`})`, this.fatalTerminal);
    });
  }

  private onMessage(child: ChildProcess, msg: EngineMessage): void {
    if (this.child !== child) return;
    switch (msg.type) {
      case 'download-progress': {
        const now = Date.now();
        if (now - this.lastProgressLog < PROGRESS_LOG_MS && msg.downloadedBytes < msg.totalBytes) return;
        this.lastProgressLog = now;
        const pct = msg.totalBytes > 0 ? Math.floor((msg.downloadedBytes / msg.totalBytes) * 100) : null;
        logger.info({ provider: this.config.providerId, source: this.config.source, downloaded: msg.downloadedBytes, total: msg.totalBytes, percent: pct }, 'downloading the local model');
        return;
      }
      case 'ready': {
        this.info = msg.info;
        this.readyAt = Date.now();
        this.degraded = false;
        const start = this.start;
        this.start = null;
        // A ready engine must not keep an otherwise finished process alive; the engine exits by
        // itself when this process goes away (the IPC channel closes).
        child.unref();
        (child.channel as { unref?: () => void } | undefined)?.unref?.();
        logger.info({ provider: this.config.providerId, source: this.config.source, pid: child.pid, ...msg.info }, 'local engine ready');
        start?.resolve(msg.info);
        return;
      }
      case 'fatal':
        this.fatalMessage = msg.message;
        this.fatalTerminal = msg.terminal === true;
        this.lastError = msg.message;
        this.degraded = true;
        logger.error({ provider: this.config.providerId, source: this.config.source, err: msg.message }, 'local engine failed');
        return;
    }
  }

  private onFailure(child: ChildProcess | null, reason: string, terminal = false): void {
    if (child !== null && this.child !== child) return;
    if (child) {
      child.removeAllListeners('message');
      child.removeAllListeners('exit');
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    this.child = null;
    const wasReadyFor = this.info ? Date.now() - this.readyAt : 0;
    this.info = null;
    if (this.isStopped) {
      this.start?.reject(new Error('stopped'));
      this.start = null;
      return;
    }
    this.failures++;
    this.failuresInRow = wasReadyFor >= STABLE_AFTER_MS ? 1 : this.failuresInRow + 1;
    this.lastError = reason;
    const start = this.start;
    this.start = null;
    start?.reject(new Error(reason));
    if (terminal) {
      this.degraded = false;
      this.failedWithFile = modelFileStamp(this.config.source);
      this.failedAt = Date.now();
      logger.error({ provider: this.config.providerId, source: this.config.source, reason }, 'the local engine cannot start; not restarting it until its model file changes');
      return;
    }
    this.degraded = true;
    const delay = this.failuresInRow <= 1 ? 0 : Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (this.failuresInRow - 2));
    logger.warn({ provider: this.config.providerId, source: this.config.source, reason, restart_in_ms: delay }, 'local engine down; restarting');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.isStopped) this.spawn();
    }, delay);
    this.restartTimer.unref();
  }

  /**
   * Stop the engine. With `graceMs`, it first stops taking requests and finishes the ones in
   * flight (up to that long), then it is killed.
   */
  async stop(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
    this.isStopped = true;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    this.start?.reject(new Error('stopped'));
    this.start = null;
    const child = this.child;
    this.child = null;
    this.info = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      child.send({ type: 'shutdown' } satisfies SupervisorMessage);
    } catch {
      child.kill('SIGKILL');
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

const engines = new Map<string, EngineSupervisor>();

/** Engines are keyed by provider id and model source. */
const engineKey = (providerId: string, source: string) => `${providerId}\u0000${source}`;

/**
 * The supervisor of the engine serving `source` for a provider. A settings change (config
 * reload) replaces it: the old engine finishes its requests, then stops.
 */
export function engineFor(config: Omit<EngineStartConfig, 'token'>, loadWaitMs: number): EngineSupervisor {
  const key = engineKey(config.providerId, config.source);
  const existing = engines.get(key);
  const wanted = JSON.stringify(config);
  if (existing && existing.settingsKey === wanted) return existing;
  if (existing) void existing.stop(60_000);
  const next = new EngineSupervisor(config, loadWaitMs);
  engines.set(key, next);
  return next;
}

/** Status of every engine this process supervises. */
export function localEngineStatus(): EngineStatus[] {
  return [...engines.values()].map((e) => e.status());
}

/**
 * Stop the engines whose (provider, source) `keep` does not accept (after a config reload);
 * they finish their in-flight requests first (up to a minute).
 */
export function stopEnginesExcept(keep: (providerId: string, source: string) => boolean): void {
  for (const [key, engine] of engines) {
    if (keep(engine.config.providerId, engine.config.source)) continue;
    engines.delete(key);
    void engine.stop(60_000);
  }
}

/** Stop every engine (gateway shutdown, tests). */
export async function stopLocalEngines(): Promise<void> {
  const all = [...engines.values()];
  engines.clear();
  await Promise.all(all.map((e) => e.stop()));
}
