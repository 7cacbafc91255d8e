/**
 * Sticky routing for prompt caching (OpenRouter's provider stickiness): after a request with a
 * sticky key (`session_id` / `op.session`, else `prompt_cache_key`) was served, the next request
 * with the same key and model prefers the same endpoint, so the upstream's prompt cache is hit.
 * Entries expire after `idleMs` without use (10 minutes, as OpenRouter); at most `maxEntries`
 * are kept (the least recently used go first). In-process, per replica.
 * @see https://openrouter.ai/docs/guides/best-practices/prompt-caching
 */
export class StickyRoutes {
  private readonly byKey = new Map<string, { endpoint: string; at: number }>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly idleMs = 10 * 60_000,
    private readonly maxEntries = 50_000,
  ) {}

  /** The endpoint id last used for this key and model, unless idle too long. */
  get(key: string, model: string): string | undefined {
    const k = `${model}\u0000${key}`;
    const hit = this.byKey.get(k);
    if (!hit) return undefined;
    if (this.now() - hit.at > this.idleMs) {
      this.byKey.delete(k);
      return undefined;
    }
    return hit.endpoint;
  }

  /** Remember the endpoint that served this key and model. */
  set(key: string, model: string, endpoint: string): void {
    const k = `${model}\u0000${key}`;
    this.byKey.delete(k);
    this.byKey.set(k, { endpoint, at: this.now() });
    if (this.byKey.size > this.maxEntries) this.byKey.delete(this.byKey.keys().next().value!);
  }
}

/** The sticky key of a request: its session, else its `prompt_cache_key`; none without either. */
export function stickyKey(req: { op?: { session?: string } | undefined; prompt_cache_key?: string | undefined }): string | undefined {
  return req.op?.session ?? req.prompt_cache_key;
}
