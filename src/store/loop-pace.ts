/**
 * Pacing for long synchronous work on the event loop (the record writer's statements: on SQLite
 * better-sqlite3 runs each one synchronously, and the awaits between them are microtasks, which
 * never let I/O or timers run).
 */

/**
 * Called between two steps of a long piece of work: `undefined` while the work has held the
 * event loop for less than its budget (go on at once, no await needed), else a promise settled
 * one turn of the loop later (`setImmediate`: after the I/O and timers that waited). Await it
 * only when it is a promise: `const p = pace?.(); if (p) await p;`.
 */
export type Pace = () => Promise<void> | undefined;

/** Default budget of {@link loopPace}: the longest stretch, in ms, the writer holds the loop before it yields. */
export const LOOP_SLICE_MS = 1;

/**
 * A {@link Pace} that yields once `budgetMs` (ms, wall clock, from its creation or its last
 * yield) have passed: a stretch of work then holds the loop for `budgetMs` plus one step.
 * @see https://nodejs.org/api/timers.html#setimmediatecallback-args
 */
export function loopPace(budgetMs = LOOP_SLICE_MS): Pace {
  let since = performance.now();
  const resume = (resolve: () => void): void => {
    since = performance.now();
    resolve();
  };
  return () => (performance.now() - since < budgetMs ? undefined : new Promise<void>((resolve) => setImmediate(resume, resolve)));
}
