/**
 * A fixed set of slots (the engine's parallel sequences) and a bounded FIFO of requests waiting
 * for one. Used inside the engine process; no llama.cpp types here.
 */

/** Thrown by {@link SlotPool.acquire} when the queue is full. */
export class QueueFullError extends Error {
  constructor(readonly waiting: number) {
    super(`the local engine is busy: all sequences are generating and ${waiting} requests are queued`);
    this.name = 'QueueFullError';
  }
}

interface Waiter<T> {
  resolve(slot: T): void;
  reject(err: unknown): void;
}

export class SlotPool<T> {
  private readonly free: T[];
  private readonly waiters: Waiter<T>[] = [];
  readonly size: number;

  constructor(slots: readonly T[], private readonly maxQueue: number) {
    this.free = [...slots];
    this.size = slots.length;
  }

  /** Slots generating now. */
  get busy(): number {
    return this.size - this.free.length;
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waiters.length;
  }

  /**
   * A free slot, now or when one is released (FIFO).
   * @throws QueueFullError when no slot is free and `maxQueue` requests already wait.
   * @throws the signal's reason when aborted while waiting.
   */
  acquire(signal?: AbortSignal): Promise<T> {
    signal?.throwIfAborted();
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    if (this.waiters.length >= this.maxQueue) return Promise.reject(new QueueFullError(this.waiters.length));
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        resolve: (s) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(s);
        },
        reject,
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Give a slot back: the longest-waiting request gets it, else it becomes free. */
  release(slot: T): void {
    const next = this.waiters.shift();
    if (next) {
      next.resolve(slot);
      return;
    }
    this.free.push(slot);
  }
}
