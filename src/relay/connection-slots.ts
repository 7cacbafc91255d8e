import { GatewayError } from '../errors/gateway-error.js';

/** A held connection slot: call once the upstream call is over (idempotent). */
export type ReleaseSlot = () => void;

/** A granted slot and how long it was waited for, in ms. */
export interface Slot {
  release: ReleaseSlot;
  /** Whether every slot was busy when asked (the call queued). */
  waited: boolean;
  waitedMs: number;
}

interface Waiter {
  grant: () => void;
}

/**
 * The local connection slots of one provider: at most `max` upstream calls at once (a stream
 * holds its slot for its whole life), the others wait in arrival order. Waiting is bounded and
 * measured apart from the upstream's own time (first token, idle), so a full local pool is not
 * mistaken for a slow or failing provider.
 */
export class ConnectionSlots {
  private inUse = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly max: number) {}

  /** Calls holding a slot now. */
  get busy(): number {
    return this.inUse;
  }

  /**
   * Take a slot, waiting at most `waitMs` (0 = no bound) for one to free up.
   * @throws GatewayError `connection_pool_exhausted` (retryable, scope gateway) when the wait
   *   runs out; `client_closed_request` when `signal` aborts first.
   */
  acquire(providerId: string, waitMs: number, signal: AbortSignal): Promise<Slot> {
    const started = performance.now();
    const slot = (waited: boolean): Slot => {
      let held = true;
      return {
        waited,
        waitedMs: Math.round(performance.now() - started),
        release: () => {
          if (!held) return;
          held = false;
          this.handOn();
        },
      };
    };
    if (this.inUse < this.max && this.waiting.length === 0) {
      this.inUse++;
      return Promise.resolve(slot(false));
    }
    if (signal.aborted) return Promise.reject(new GatewayError('client_closed_request', 'the client closed the connection'));
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          cleanup();
          resolve(slot(true));
        },
      };
      const leave = (err: GatewayError) => {
        cleanup();
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(err);
      };
      const timer = waitMs > 0
        ? setTimeout(() => leave(new GatewayError(
          'connection_pool_exhausted',
          `${providerId}: all ${this.max} upstream connections (max_connections) stayed busy for ${waitMs} ms (timeouts.pool_wait_ms)`,
          { metadata: { provider: providerId, max_connections: this.max }, retryAfterSeconds: 1 },
        )), waitMs)
        : undefined;
      const onAbort = () => leave(new GatewayError('client_closed_request', 'the client closed the connection'));
      const cleanup = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  /** A slot was released: give it to the longest waiter, or free it. */
  private handOn(): void {
    const next = this.waiting.shift();
    if (next) next.grant();
    else this.inUse--;
  }
}
