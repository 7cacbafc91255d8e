/**
 * The load generator of the bench's streams-at-scale section, run as a child process of
 * bench/run.ts (`node --import tsx bench/stream-load.ts`, commands over the IPC channel), so the
 * thousands of streams it holds do not share an event loop with the bench's `/health` prober.
 *
 * Commands (parent → child), each answered by one message with the same `id`:
 *   - `open`: open `count` streams (`POST url` with `headers` and `body`, one connection each,
 *     no keep-alive), at most `pending` waiting for their response head at a time. Answers when
 *     every one has its first body byte or failed: `ok` (status 200 and a first byte), the time to
 *     first byte of each (ms, from the request's start to its first body byte), `refused` (status
 *     not 200: status, the error `code` of its JSON body, the time until the whole answer was
 *     read, in ms), `failed` (connection errors such as ECONNRESET, by message).
 *   - `mark`: remembers how many bytes each open stream has received.
 *   - `live`: how many streams opened so far received bytes since the last `mark` and are still
 *     open, and how many ended or failed after they had opened (none should while held).
 *   - `close`: destroys every stream opened so far and forgets them; answers once done.
 * @see https://nodejs.org/api/child_process.html#subprocesssendmessage-sendhandle-options-callback
 */
import { Agent, request } from 'node:http';

/** One command from the parent. */
export type LoadCommand =
  | { id: number; cmd: 'open'; url: string; headers: Record<string, string>; body: string; count: number; pending: number; deadlineMs: number }
  | { id: number; cmd: 'mark' }
  | { id: number; cmd: 'live' }
  | { id: number; cmd: 'close' };

/** The answer to `open`. */
export interface OpenResult {
  id: number;
  ok: number;
  /** Time to first body byte of every stream that opened, in ms (unsorted). */
  ttfbMs: number[];
  /** Time until the TCP connection was established, of every request, in ms (unsorted). */
  connectMs: number[];
  /** Time until the response head arrived, of every stream that opened, in ms (unsorted). */
  headMs: number[];
  refused: { status: number; code: string | undefined; ms: number }[];
  failed: { message: string; count: number }[];
  /** From the first request to the last answer (or failure), in ms. */
  elapsedMs: number;
}

/** The answer to `live`. */
export interface LiveResult {
  id: number;
  live: number;
  open: number;
  /** Streams that had opened and then ended or failed. */
  ended: number;
  firstEnd: string | undefined;
}

interface Held {
  bytes: number;
  mark: number;
  done: boolean;
  /** Closed by a `close` command: its end is not counted. */
  closed: boolean;
  destroy: () => void;
}

const held: Held[] = [];
let ended = 0;
let firstEnd: string | undefined;
const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });

function send(message: object): void {
  process.send?.(message);
}

function open(c: Extract<LoadCommand, { cmd: 'open' }>): void {
  const url = new URL(c.url);
  const headers = { ...c.headers, 'content-length': String(Buffer.byteLength(c.body)) };
  const result: OpenResult = { id: c.id, ok: 0, ttfbMs: [], connectMs: [], headMs: [], refused: [], failed: [], elapsedMs: 0 };
  const failures = new Map<string, number>();
  const t0 = performance.now();
  let started = 0;
  let settled = 0;
  const unanswered = new Set<() => void>();
  const deadline = setTimeout(() => {
    // Whatever has not answered by the deadline is a failure; the rest are not started.
    const key = `no first byte within ${c.deadlineMs / 1000} s`;
    failures.set(key, (failures.get(key) ?? 0) + unanswered.size + (c.count - started));
    settled = c.count;
    started = c.count;
    for (const give of unanswered) give();
    finish();
  }, c.deadlineMs);
  const finish = () => {
    clearTimeout(deadline);
    result.failed = [...failures].map(([message, count]) => ({ message, count }));
    result.elapsedMs = performance.now() - t0;
    send(result);
  };
  const settle = () => {
    if (settled >= c.count) return; // after the deadline
    settled++;
    if (settled === c.count) finish();
    else startMore();
  };
  const startOne = () => {
    started++;
    const s = performance.now();
    let answered = false;
    const giveUp = () => {
      answered = true;
      req.destroy();
    };
    unanswered.add(giveUp);
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      const headAt = performance.now() - s;
      if (res.statusCode !== 200) {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('end', () => {
          let code: string | undefined;
          try {
            code = (JSON.parse(Buffer.concat(parts).toString('utf8')) as { error?: { code?: string } }).error?.code;
          } catch {
            code = undefined;
          }
          result.refused.push({ status: res.statusCode ?? 0, code, ms: performance.now() - s });
          answered = true;
          unanswered.delete(giveUp);
          settle();
        });
        return;
      }
      const h: Held = { bytes: 0, mark: 0, done: false, closed: false, destroy: () => req.destroy() };
      res.on('data', (b: Buffer) => {
        if (h.bytes === 0) {
          result.ok++;
          result.ttfbMs.push(performance.now() - s);
          result.headMs.push(headAt);
          held.push(h);
          answered = true;
          unanswered.delete(giveUp);
          settle();
        }
        h.bytes += b.length;
      });
      const end = (why: string) => {
        if (h.done || h.closed) return;
        h.done = true;
        if (h.bytes > 0) {
          ended++;
          firstEnd ??= why;
        } else if (!answered) {
          answered = true;
          unanswered.delete(giveUp);
          failures.set(`200 then ${why} before any byte`, (failures.get(`200 then ${why} before any byte`) ?? 0) + 1);
          settle();
        }
      };
      res.on('end', () => end('ended'));
      res.on('error', (err) => end(err.message));
    });
    req.once('socket', (socket) => socket.once('connect', () => result.connectMs.push(performance.now() - s)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) return;
      answered = true;
      unanswered.delete(giveUp);
      const key = err.code ?? err.message;
      failures.set(key, (failures.get(key) ?? 0) + 1);
      settle();
    });
    req.end(c.body);
  };
  const startMore = () => {
    while (started < c.count && started - settled < c.pending) startOne();
  };
  if (c.count === 0) finish();
  else startMore();
}

process.on('message', (m: LoadCommand) => {
  switch (m.cmd) {
    case 'open':
      open(m);
      return;
    case 'mark':
      for (const h of held) h.mark = h.bytes;
      send({ id: m.id });
      return;
    case 'live': {
      const open = held.filter((h) => !h.done);
      const live: LiveResult = { id: m.id, live: open.filter((h) => h.bytes > h.mark).length, open: open.length, ended, firstEnd };
      send(live);
      return;
    }
    case 'close':
      for (const h of held) {
        h.closed = true;
        h.destroy();
      }
      held.length = 0;
      send({ id: m.id });
      return;
    default: {
      const never: never = m;
      throw new Error(`stream-load: unknown command ${JSON.stringify(never)}`);
    }
  }
});
process.on('disconnect', () => process.exit(0));
send({ ready: true });
