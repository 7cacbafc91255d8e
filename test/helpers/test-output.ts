/**
 * Quiet test output. The logs of the gateways a test file starts — in this process
 * ({@link gatewayLogStream}, used by gateway.ts) and spawned CLI processes ({@link keepChildLogs})
 * — go to one file per test process under `test-artifacts/logs/` (git-ignored). They are printed
 * only when a test of the file failed: the file's path and its last lines, on stderr, as the
 * process exits. The SDK deprecation notices that tests trigger on purpose (old model names,
 * `thinking.type: enabled`) are dropped; any other console warning is kept.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import pino from 'pino';

/** `<repo>/test-artifacts/logs`. */
export const logDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-artifacts', 'logs');

/** Lines of each log printed when a test failed. */
const TAIL_LINES = 60;

const files = new Set<string>();

/** This test process's log file for `name` (created on first use; printed on failure). */
export function testLogFile(name: string): string {
  mkdirSync(logDir, { recursive: true });
  const base = path.basename(process.argv[1] ?? 'test').replace(/\.test\.[cm]?[jt]s$/, '');
  const file = path.join(logDir, `${base}.${name}.${process.pid}.log`);
  if (!files.has(file)) {
    files.add(file);
    appendFileSync(file, '');
  }
  return file;
}

let gatewayStream: pino.DestinationStream | null = null;

/** The log stream of in-process gateways: synchronous writes, so nothing is lost at exit. */
export function gatewayLogStream(): pino.DestinationStream {
  gatewayStream ??= pino.destination({ dest: testLogFile('gateway'), sync: true });
  return gatewayStream;
}

/** Append a spawned process's stdout and stderr (when piped) to its own log file. */
export function keepChildLogs(child: ChildProcess, name: string): string {
  const file = testLogFile(name);
  const write = (d: Buffer | string) => appendFileSync(file, d);
  child.stdout?.on('data', write);
  child.stderr?.on('data', write);
  return file;
}

process.on('exit', (code) => {
  if (code === 0) return;
  for (const file of files) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (!text) continue;
    const lines = text.trimEnd().split('\n');
    process.stderr.write(`logs of this test file: ${file} (last ${Math.min(TAIL_LINES, lines.length)} of ${lines.length} lines)\n${lines.slice(-TAIL_LINES).join('\n')}\n`);
  }
});

/** Deprecation notices of the SDKs that the tests cause on purpose (exact message starts). */
const KNOWN_SDK_NOTICES = [/^The model '[^']+' is deprecated and will reach end-of-life on /, /^Using Claude with \S+ and 'thinking\.type=enabled' is deprecated\./];
const warn = console.warn.bind(console);
console.warn = (...args: unknown[]) => {
  if (typeof args[0] === 'string' && KNOWN_SDK_NOTICES.some((re) => re.test(args[0] as string))) return;
  warn(...args);
};
