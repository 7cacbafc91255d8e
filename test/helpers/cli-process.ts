import { spawn, type ChildProcess } from 'node:child_process';
import { keepChildLogs } from './test-output.js';

/** The built CLI (`npm run build` writes it); suites that spawn it skip when it is missing. */
export const CLI = new URL('../../dist/src/cli.js', import.meta.url).pathname;

/** A spawned `opinference` CLI process and what it printed so far. */
export interface CliProcess {
  child: ChildProcess;
  /** stdout and stderr as they arrived, interleaved. */
  logs(): string;
  /** stdout alone (JSON log lines). */
  stdout(): string;
  /** stderr alone. */
  stderr(): string;
  /** Its exit code once it exited (null when a signal ended it). */
  exited: Promise<number | null>;
}

/**
 * Spawn `node dist/src/cli.js <args>` with `env`, its output kept under `name` in the test
 * log ({@link keepChildLogs}) and collected. `stdout` may be a file descriptor (then `stdout()`
 * stays empty).
 */
export function spawnCli(args: readonly string[], env: NodeJS.ProcessEnv, name: string, stdout: 'pipe' | number = 'pipe'): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', stdout, 'pipe'] });
  keepChildLogs(child, name);
  let logs = '';
  let out = '';
  let err = '';
  child.stdout?.on('data', (d) => {
    logs += d;
    out += d;
  });
  child.stderr!.on('data', (d) => {
    logs += d;
    err += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, logs: () => logs, stdout: () => out, stderr: () => err, exited };
}

/**
 * Poll `GET http://127.0.0.1:<port>/health` every `everyMs` until it answers 2xx, at most
 * `tries` times (each request bounded by 1 s); resolves whether it did.
 */
export async function untilHealthy(port: number, tries = 100, everyMs = 100): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false)) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return false;
}
