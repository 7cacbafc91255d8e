import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import pino from 'pino';

/** Most workers `--workers` accepts. */
const MAX_WORKERS = 256;
/** First restart delay after a crash, in ms; doubles with each crash in a row. */
const RESTART_BASE_MS = 250;
/** Longest restart delay, in ms. */
const RESTART_MAX_MS = 10_000;
/** A worker that ran this long before exiting resets the backoff, in ms. */
const STABLE_MS = 30_000;
/** Workers that exit before ever listening, in a row, after which the primary gives up. */
const MAX_START_FAILURES = 5;

/**
 * The worker count of `serve --workers VALUE`: a whole number from 1, or `auto` (one per core the
 * process may use, `os.availableParallelism()`).
 * @throws Error with a message for the operator when the value is neither.
 */
export function parseWorkers(value: string | undefined): number {
  if (value === undefined) return 1;
  if (value === 'auto') return availableParallelism();
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_WORKERS) throw new Error(`--workers takes a number from 1 to ${MAX_WORKERS} or "auto", got "${value}"`);
  return Number(value);
}

/**
 * Why a configuration cannot keep its guarantees across `workers` processes, or null when it can.
 * Key limits, rate limits, endpoint health and key changes live in each process unless Redis
 * holds them, and keys with limits can be created at any time through the API, so more than one
 * worker needs `OP_REDIS_URL`.
 */
export function workersProblem(workers: number, redisUrl: string | undefined): string | null {
  if (workers <= 1 || redisUrl) return null;
  return `--workers ${workers} needs OP_REDIS_URL (e.g. redis://127.0.0.1:6379): key limits, rate limits, endpoint health and key changes must be shared by the workers to stay exact; without Redis, run one worker`;
}

/** Environment variable telling a worker its index (0 … N-1); a restarted worker keeps its index. */
export const WORKER_INDEX_ENV = 'OP_WORKER_INDEX';

/**
 * The primary process of `serve --workers N` (node:cluster): forks N workers that each run the
 * gateway and share one listening port (the primary hands connections out round-robin). It
 * restarts a worker that exits unexpectedly, after a delay doubling from 250 ms to 10 s per crash
 * in a row (reset once a worker ran 30 s), and gives up (exit 1) when workers exit before
 * listening 5 times in a row (a port in use, a database that refuses). SIGHUP is passed to every
 * worker (each reloads its config); SIGTERM or SIGINT is passed to every worker (each drains), and
 * the primary exits once all have: 0 when every worker exited 0 (or, still starting, ended by that
 * SIGTERM), else 1.
 * @see https://nodejs.org/api/cluster.html
 */
export function runPrimary(workers: number): void {
  const log = pino({ base: { pid: process.pid, role: 'primary' } });
  const indexOf = new Map<Worker, number>();
  const startedAt = new Map<Worker, number>();
  const listening = new Set<Worker>();
  let crashesInRow = 0;
  let startFailures = 0;
  let stopping = false;
  let failed = false;

  const fork = (index: number) => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index) });
    indexOf.set(worker, index);
    startedAt.set(worker, Date.now());
    log.info({ worker: index, workerPid: worker.process.pid }, 'worker started');
    worker.on('listening', () => {
      listening.add(worker);
      startFailures = 0;
    });
  };

  const stop = (signal: string, code: number) => {
    if (code !== 0) failed = true;
    if (stopping) return;
    stopping = true;
    log.info({ signal, workers: Object.keys(cluster.workers ?? {}).length }, 'stopping workers: each drains its in-flight requests');
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
  };

  cluster.on('exit', (worker, code, signal) => {
    const index = indexOf.get(worker) ?? 0;
    const ran = Date.now() - (startedAt.get(worker) ?? Date.now());
    const wasListening = listening.delete(worker);
    indexOf.delete(worker);
    startedAt.delete(worker);
    if (stopping) {
      // A worker still starting (not yet listening, so nothing in flight and no SIGTERM handler
      // of its own yet) ends by the primary's SIGTERM itself: a clean stop, not a failure.
      const stoppedWhileStarting = !wasListening && code === null && signal === 'SIGTERM';
      if (code !== 0 && !stoppedWhileStarting) failed = true;
      log.info({ worker: index, code, signal, ...(stoppedWhileStarting ? { stoppedWhileStarting } : {}) }, 'worker stopped');
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        log.info({}, 'stopped');
        process.exit(failed ? 1 : 0);
      }
      return;
    }
    if (!wasListening && ++startFailures >= MAX_START_FAILURES) {
      log.fatal({ worker: index, code, signal }, `workers exited before listening ${MAX_START_FAILURES} times in a row; giving up`);
      stop('worker start failures', 1);
      return;
    }
    crashesInRow = ran >= STABLE_MS ? 0 : crashesInRow + 1;
    const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** Math.max(0, crashesInRow - 1));
    log.error({ worker: index, code, signal, ranMs: ran, restartInMs: delay }, 'worker exited unexpectedly; restarting it');
    setTimeout(() => {
      if (!stopping) fork(index);
    }, delay);
  });

  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));
  process.on('SIGHUP', () => {
    log.info({}, 'SIGHUP: workers reload their config');
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGHUP');
  });
  log.info({ workers }, 'starting workers');
  for (let i = 0; i < workers; i++) fork(i);
}

/** Whether this process is a worker forked by {@link runPrimary}. */
export function isWorker(): boolean {
  return cluster.isWorker;
}
