import { Redis } from 'ioredis';

/** The Redis the suites that need one use: `OP_TEST_REDIS_URL`, or the local default port. */
export const TEST_REDIS_URL = process.env.OP_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether a Redis answers PING at `url` right now: one connection attempt, no retries, closed
 * before it resolves. Never throws (an unreachable or refusing server is `false`), so a suite
 * can use it in a `skip` condition or as a readiness poll.
 */
export async function redisReachable(url: string = TEST_REDIS_URL): Promise<boolean> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {}); // not up (yet): the check answers false
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}
