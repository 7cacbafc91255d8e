import { Agent } from 'undici';
import type { ProviderConfig } from '../config/schema.js';
import { ConnectionSlots, type Slot } from './connection-slots.js';

/**
 * Keep-alive connection pools, one undici Agent per provider, reused across requests, each
 * behind its provider's {@link ConnectionSlots} (`max_connections` calls at once; waiting for a
 * slot is bounded by `timeouts.pool_wait_ms` and never counted as the provider's time).
 * Connect timeouts live on the agent; the others are applied per call by
 * `UpstreamExchange` (upstream-exchange.ts), the one call runner of every operation.
 */
export class UpstreamPools {
  private readonly agents = new Map<string, Agent>();
  private readonly slots = new Map<string, ConnectionSlots>();

  /** @param onWait called with each call that had to wait for a slot (provider id, ms waited). */
  constructor(private readonly onWait: (providerId: string, waitedMs: number) => void = () => {}) {}

  /**
   * Take one of the provider's connection slots (release it when the call is over).
   * @throws GatewayError `connection_pool_exhausted` after `timeouts.pool_wait_ms` of waiting.
   */
  acquire(provider: ProviderConfig, waitMs: number, signals: () => readonly AbortSignal[]): Promise<Slot> {
    let slots = this.slots.get(provider.id);
    if (!slots) {
      slots = new ConnectionSlots(provider.max_connections, (ms) => this.onWait(provider.id, ms));
      this.slots.set(provider.id, slots);
    }
    return slots.acquire(provider.id, waitMs, signals);
  }

  /** The agent for a provider (created on first use). */
  agentFor(provider: ProviderConfig): Agent {
    let agent = this.agents.get(provider.id);
    if (!agent) {
      agent = new Agent({
        connections: provider.max_connections,
        keepAliveTimeout: 30_000,
        keepAliveMaxTimeout: 300_000,
        connect: { timeout: provider.timeouts.connect_ms || undefined },
        pipelining: 1,
      });
      this.agents.set(provider.id, agent);
    }
    return agent;
  }

  /** Close every pool (waits for in-flight calls). */
  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map((a) => a.close()));
    this.agents.clear();
  }
}
