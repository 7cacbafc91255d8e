/**
 * A fleet on loopback for the cluster test: a private redis-server, gateway replicas (the built
 * CLI, `opinference serve`, as operators run it) and Debian's nginx in front, each on a free
 * port, with its files in one temporary directory. Every process is started here and stopped by
 * its own pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
export { freePort } from '../helpers/free-port.js';
import { freePort } from '../helpers/free-port.js';
import { redisReachable } from '../helpers/redis.js';
import { sleep } from '../helpers/poll.js';
import { CLI } from '../helpers/cli-process.js';

/** The built CLI (`npm run build`). */
export { CLI };

/** The path of an executable on PATH or in the usual sbin folders, or null. */
export function findExecutable(name: string): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin']) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

/** A child process started here, with its output kept. */
export interface Proc {
  child: ChildProcess;
  port: number;
  logs(): string;
  exited: Promise<number | null>;
  /** SIGTERM (SIGKILL after `graceMs`), resolved once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

function track(child: ChildProcess, port: number): Proc {
  let logs = '';
  child.stdout?.on('data', (d) => (logs += d));
  child.stderr?.on('data', (d) => (logs += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    port,
    logs: () => logs,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function waitFor(what: string, check: () => Promise<boolean>, proc: Proc, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (proc.child.exitCode !== null) throw new Error(`${what} exited (${proc.child.exitCode}):\n${proc.logs()}`);
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms:\n${proc.logs()}`);
}

/** A private redis-server (no persistence) on a free port. */
export async function startRedis(dir: string): Promise<Proc & { url: string }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = track(child, port);
  const url = `redis://127.0.0.1:${port}`;
  await waitFor('redis-server', () => redisReachable(url), proc);
  return { ...proc, url };
}

/** One gateway replica: `node dist/src/cli.js serve` (with `args`, e.g. `--workers 2`) on its own port. */
export async function startReplica(name: string, env: Record<string, string>, port?: number, args: string[] = []): Promise<Proc & { name: string; url: string }> {
  port ??= await freePort();
  const child = spawn(process.execPath, [CLI, 'serve', ...args], {
    env: { ...process.env, ...env, OP_PORT: String(port), OP_HOST: '127.0.0.1', OP_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const proc = track(child, port);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`replica ${name}`, () => fetch(`${url}/ready`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false), proc);
  return { ...proc, name, url };
}

/**
 * nginx in front of `backends` (ports on 127.0.0.1) with the shipped deploy/nginx.conf, its
 * upstream servers and port replaced, its pid, logs and temporary files in `dir`; every
 * response names the replica that answered in `x-op-upstream` (`$upstream_addr`).
 */
export async function startNginx(dir: string, backends: number[]): Promise<Proc & { url: string; version: string; reload(down: number[]): Promise<void> }> {
  const nginx = findExecutable('nginx');
  if (!nginx) throw new Error('nginx is not installed');
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  const root = process.getuid?.() === 0;
  // The shipped config (deploy/nginx.conf) with the test's replicas, port and private files.
  const template = readFileSync(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8');
  const write = (down: number[]) => {
    const servers = backends.map((p) => `    server 127.0.0.1:${p} max_fails=1 fail_timeout=10s${down.includes(p) ? ' down' : ''};\n`).join('');
    const edits: [RegExp, string][] = [
      [/^ *server gateway-\d+:8080[^\n]*\n/gm, ''],
      [/upstream gateways \{\n/, `upstream gateways {\n${servers}`],
      [/listen 8080;/, `listen 127.0.0.1:${port};`],
      [/worker_processes auto;/, 'worker_processes 1;'],
      [/http \{\n/, `http {\n${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${join(dir, `nginx-${t}`)};\n`).join('')}`],
      // Which replica answered, for the test's counts.
      [/location \/ \{\n/, 'location / {\n      add_header x-op-upstream $upstream_addr always;\n'],
    ];
    let text = template;
    for (const [re, to] of edits) {
      if (!re.test(text)) throw new Error(`deploy/nginx.conf changed: ${re} matches nothing`);
      text = text.replace(re, to);
    }
    writeFileSync(conf, `${root ? 'user root;\n' : ''}daemon off;\npid ${join(dir, 'nginx.pid')};\nerror_log ${join(dir, 'nginx-error.log')} warn;\n${text}`);
  };
  write([]);
  const version = spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr.trim();
  const child = spawn(nginx, ['-p', dir, '-e', join(dir, 'nginx-error.log'), '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = track(child, port);
  const url = `http://127.0.0.1:${port}`;
  await waitFor('nginx', () => fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false), proc);
  return {
    ...proc,
    url,
    version,
    /**
     * Mark `down` the backends listed (and only those) and reload nginx gracefully (SIGHUP):
     * resolves once the old worker has finished its requests and exited.
     */
    async reload(down: number[]) {
      const old = workers(child.pid!);
      write(down);
      child.kill('SIGHUP');
      const until = Date.now() + 60_000;
      while (Date.now() < until) {
        const now = workers(child.pid!);
        if (now.length > 0 && !now.some((w) => old.includes(w))) return;
        await sleep(50);
      }
      throw new Error(`nginx did not reload within 60 s:\n${proc.logs()}`);
    },
  };
}

/** The pids of a process's children (Linux /proc). */
function workers(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}
