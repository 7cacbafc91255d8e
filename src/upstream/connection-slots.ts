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

  /** @param onWait called for each call that had to wait, with the ms it waited. */
  constructor(readonly max: number, private readonly onWait: (waitedMs: number) => void = () => {}) {}

  /** Calls holding a slot now. */
  get busy(): number {
    return this.inUse;
  }

  /**
   * Take a slot, waiting at most `waitMs` (0 = no bound) for one to free up.
   * `signals` (the client going away, shutdown) end a wait; they are only asked for and
   * listened to when the call has to wait.
   * @throws GatewayError `connection_pool_exhausted` (retryable, scope gateway) when the wait
   *   runs out; `client_closed_request` when one of `signals` aborts first.
   */
  acquire(providerId: string, waitMs: number, cancelledBy: () => readonly AbortSignal[]): Promise<Slot> {
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
    const signals = cancelledBy();
    if (signals.some((s) => s.aborted)) return Promise.reject(new GatewayError('client_closed_request', 'the client closed the connection'));
    return new Promise<Slot>((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          cleanup();
          const granted = slot(true);
          this.onWait(granted.waitedMs);
          resolve(granted);
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
          `all ${this.max} upstream connections to ${providerId} (max_connections) stayed busy for ${waitMs} ms (timeouts.pool_wait_ms)`,
          { metadata: { provider_name: providerId, max_connections: this.max }, retryAfterSeconds: 1 },
        )), waitMs)
        : undefined;
      const onAbort = () => leave(new GatewayError('client_closed_request', 'the client closed the connection'));
      const cleanup = () => {
        clearTimeout(timer);
        for (const s of signals) s.removeEventListener('abort', onAbort);
      };
      for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
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
