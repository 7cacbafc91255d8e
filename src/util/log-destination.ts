import { fstatSync, writeSync } from 'node:fs';
import pino from 'pino';

/** Most log output held in memory while the log file cannot be written (disk full), in bytes; newer lines are dropped beyond. */
export const LOG_BUFFER_BYTES = 16 * 1024 * 1024;
/** Longest the process spends writing buffered log lines when it exits, in ms. */
export const LOG_EXIT_FLUSH_MS = 1_000;

/** sonic-boom's buffers (pino 10 / sonic-boom 4), read only to flush them with a bound at exit. */
interface SonicBoomBuffers {
  _bufs?: (string | Buffer)[];
  _writingBuf?: string | Buffer;
  _writing?: boolean;
}

/**
 * The gateway's log destination: pino's asynchronous file-descriptor destination (sonic-boom,
 * `sync: false`), so a slow or full log file never blocks the event loop. A write error (ENOSPC
 * on a full disk) is counted instead of crashing the process, lines beyond
 * {@link LOG_BUFFER_BYTES} are dropped, and the flush pino runs at exit gives up after
 * {@link LOG_EXIT_FLUSH_MS} or at the first write error instead of retrying forever, so
 * SIGTERM always ends the process.
 * @see https://getpino.io/#/docs/asynchronous
 */
export function asyncLogDestination(fd = 1): { stream: pino.DestinationStream; errors: () => number } {
  nonBlockingStdio(fd);
  const dest = pino.destination({ dest: fd, sync: false, maxLength: LOG_BUFFER_BYTES });
  let errors = 0;
  dest.on('error', () => {
    // Keep running: the buffered lines are written again with the next line, if the disk frees up.
    errors++;
  });
  (dest as unknown as { flushSync: () => void }).flushSync = () => flushBounded(dest as unknown as SonicBoomBuffers, fd, LOG_EXIT_FLUSH_MS);
  return { stream: dest, errors: () => errors };
}

/**
 * Put a pipe or socket stdout/stderr in non-blocking mode, as Node does (through libuv) when
 * `process.stdout` is first used: a write to a pipe nobody reads then fails with EAGAIN and is
 * retried later, instead of blocking a thread-pool thread for ever, which would also keep the
 * process from exiting (Node joins its thread pool at exit). Files are left alone.
 */
function nonBlockingStdio(fd: number): void {
  try {
    const st = fstatSync(fd);
    if (!st.isFIFO() && !st.isSocket()) return;
  } catch {
    return;
  }
  if (fd === 1) void process.stdout.fd;
  else if (fd === 2) void process.stderr.fd;
}

/**
 * Write what sonic-boom still buffers, synchronously, for at most `ms`; stop at the first error
 * but EAGAIN. Nothing is written while an asynchronous write has not returned.
 */
function flushBounded(s: SonicBoomBuffers, fd: number, ms: number): void {
  // A write still under way means the destination is slow or stuck (a pipe nobody reads, a
  // full disk): a synchronous write now could block the exit for ever.
  if (!Array.isArray(s._bufs) || s._writing) return;
  const chunks: (string | Buffer)[] = [];
  if (!s._writing && s._writingBuf && s._writingBuf.length > 0) chunks.push(s._writingBuf);
  chunks.push(...s._bufs);
  s._bufs = [];
  s._writingBuf = '';
  const deadline = Date.now() + ms;
  for (const chunk of chunks) {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    while (buf.length > 0) {
      if (Date.now() > deadline) return;
      try {
        buf = buf.subarray(writeSync(fd, buf));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      }
    }
  }
}

/**
 * Wait until a log destination of {@link asyncLogDestination} has written what it holds, for at
 * most `ms` (a pipe nobody reads never drains): called before a deliberate `process.exit`, so
 * the last lines of a clean stop ("draining", "stopped") are not lost while a write is under
 * way. sonic-boom's own `flush(cb)` calls back at once without a `minLength`, so this waits for
 * its `drain` (emitted when a write returns with nothing left). Never rejects.
 */
export function flushLog(dest: pino.DestinationStream, ms = LOG_EXIT_FLUSH_MS): Promise<void> {
  const boom = dest as SonicBoomBuffers & { once?: (event: 'drain', cb: () => void) => void; off?: (event: 'drain', cb: () => void) => void };
  if (!boom._writing || typeof boom.once !== 'function') return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      boom.off?.('drain', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    boom.once!('drain', done);
  });
}
