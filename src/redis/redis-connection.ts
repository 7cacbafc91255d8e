import { Redis } from 'ioredis';

/** Settings of the one Redis connection (`redis:` in the config; the URL is `OP_REDIS_URL`). */
export interface RedisSettings {
  /** Longest wait for any one command's answer, in ms; then it fails (`Command timed out`). */
  commandTimeoutMs: number;
  /** Longest wait for the connection at start and for each reconnection attempt, in ms. */
  connectTimeoutMs: number;
}

/** How often an unavailable connection is probed with PING, in ms. */
const PROBE_INTERVAL_MS = 1000;

/** Where errors of the connection are logged (pino-compatible). */
export interface RedisLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * The gateway's single Redis connection: created, connected, watched and closed here, shared by
 * everything that keeps state in Redis (key limits today; endpoint health, key-change
 * notifications and the response cache use the same {@link client}).
 *
 * Every command has a timeout (ioredis `commandTimeout`), commands never queue while the
 * connection is down (`enableOfflineQueue: false`), and a command that timed out marks the
 * connection unavailable: until a PING (probed every second) answers again, {@link available}
 * is false so callers fail at once instead of each waiting out its own timeout.
 */
export class RedisConnection {
  readonly client: Redis;
  /**
   * Prefix of every key and pub/sub channel this gateway uses (`OP_REDIS_PREFIX`, default `op:`):
   * fleets (or tests) sharing one Redis stay apart.
   */
  readonly prefix: string;
  private subscriber: Redis | undefined;
  private readonly handlers = new Map<string, Array<(message: string) => void>>();
  private unavailable = false;
  private probe: NodeJS.Timeout | undefined;
  private down = false;

  constructor(url: string, private readonly settings: RedisSettings, private readonly log: RedisLog, prefix = 'op:') {
    this.prefix = prefix;
    this.client = new Redis(url, {
      commandTimeout: settings.commandTimeoutMs,
      connectTimeout: settings.connectTimeoutMs,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      lazyConnect: false,
    });
    // Connection errors surface on the calls that need Redis; the client's own error events
    // are logged once per outage.
    this.client.on('error', (err: Error) => {
      if (!this.down) log.error({ err: err.message }, 'redis unavailable');
      this.down = true;
    });
    this.client.on('ready', () => {
      if (this.down) log.info({}, 'redis reachable again');
      this.down = false;
    });
  }

  /** False while the connection is not ready or after a command timed out (until a PING answers). */
  get available(): boolean {
    return this.client.status === 'ready' && !this.unavailable;
  }

  /**
   * Wait for the connection at start: resolves when it is ready, when the first attempt failed
   * (refused, unknown host: the gateway then starts with Redis unavailable and says so), or
   * after `connectTimeoutMs` (an answerless server). Never rejects.
   */
  waitUntilReady(): Promise<void> {
    if (this.client.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.client.off('ready', onReady);
        this.client.off('error', onError);
        if (!ok) this.log.warn({ waitedMs: this.settings.connectTimeoutMs }, 'redis not reachable at start: keys with limits get 503 limits_unavailable until it is');
        resolve();
      };
      const onReady = () => done(true);
      const onError = () => done(false);
      const timer = setTimeout(() => done(false), this.settings.connectTimeoutMs);
      this.client.once('ready', onReady);
      this.client.once('error', onError);
    });
  }

  /**
   * Note a failed command: a timeout marks the connection unavailable until a PING answers.
   * @returns whether the error was a command timeout.
   */
  noteFailure(err: unknown): boolean {
    if (!(err instanceof Error) || !/Command timed out/i.test(err.message)) return false;
    if (!this.unavailable) this.log.error({ commandTimeoutMs: this.settings.commandTimeoutMs }, 'redis command timed out: failing Redis-backed calls at once until it answers again');
    this.unavailable = true;
    this.probe ??= setInterval(() => {
      this.client.ping().then(
        () => {
          this.unavailable = false;
          clearInterval(this.probe);
          this.probe = undefined;
          this.log.info({}, 'redis answers again');
        },
        () => {},
      );
    }, PROBE_INTERVAL_MS).unref();
    return true;
  }

  /** Whether a PING is answered within the command timeout (for `/ready`). */
  async ping(): Promise<boolean> {
    try {
      return (await this.client.ping()) === 'PONG';
    } catch (err) {
      this.noteFailure(err);
      return false;
    }
  }

  /**
   * Call `handler` with every message published on `channel` (a full channel name, prefix
   * included). The first subscription opens the one subscriber connection (a Redis connection
   * in subscriber mode can run no other command, so ioredis needs a second one); it reconnects
   * and resubscribes by itself after an outage. Messages published while it is down are lost.
   */
  subscribe(channel: string, handler: (message: string) => void): void {
    if (!this.subscriber) {
      const sub = this.client.duplicate({ enableOfflineQueue: true, commandTimeout: undefined, maxRetriesPerRequest: null });
      // Outages are logged once by the main connection's handler.
      sub.on('error', () => {});
      sub.on('message', (ch: string, message: string) => {
        for (const h of this.handlers.get(ch) ?? []) {
          try {
            h(message);
          } catch (err) {
            this.log.error({ err, channel: ch }, 'redis message handler failed');
          }
        }
      });
      this.subscriber = sub;
    }
    const list = this.handlers.get(channel);
    if (list) list.push(handler);
    else {
      this.handlers.set(channel, [handler]);
      this.subscriber.subscribe(channel).catch((err: unknown) => this.log.warn({ err: err instanceof Error ? err.message : err, channel }, 'redis subscribe failed'));
    }
  }

  /**
   * Publish `message` on `channel` without waiting: never throws, never queues while Redis is
   * down (the message is dropped). `onResult` learns whether Redis took it.
   */
  publish(channel: string, message: string, onResult?: (ok: boolean) => void): void {
    if (!this.available) {
      onResult?.(false);
      return;
    }
    this.client.publish(channel, message).then(
      () => onResult?.(true),
      (err: unknown) => {
        this.noteFailure(err);
        onResult?.(false);
      },
    );
  }

  /** Close the connection (QUIT when it is up, else drop it), and the subscriber connection. */
  async close(): Promise<void> {
    clearInterval(this.probe);
    this.subscriber?.disconnect();
    try {
      if (this.client.status === 'ready') await this.client.quit();
      else this.client.disconnect();
    } catch {
      this.client.disconnect();
    }
  }
}
