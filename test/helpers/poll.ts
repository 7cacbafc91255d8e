/** `ms` milliseconds from now (a timer, never a busy wait). */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Poll `check` every `everyMs` until it holds, for at most `ms`; resolves with the milliseconds
 * it took (rounded). Throws `Error("<what>: not within <ms> ms")` once the time is up, so a
 * failing wait names what it waited for.
 */
export async function until(what: string, check: () => Promise<boolean> | boolean, ms = 5_000, everyMs = 20): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return Math.round(performance.now() - started);
    if (performance.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(everyMs);
  }
}
