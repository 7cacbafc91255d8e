import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { makeScopePublic } from '../route-auth.js';

/**
 * Headers of every dashboard file. The pages load only their own script and stylesheet and
 * talk only to this gateway; stored prompt and completion text is rendered as text, and the
 * policy is a second line of defence should that ever slip.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // Fixed file names: the browser revalidates (ETag / Last-Modified) instead of caching blindly.
  'cache-control': 'no-cache',
};

/** The repository root: the nearest folder above this file holding package.json. */
function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('dashboard: no package.json above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
  return dir;
}

/** Where `npm run build` writes the dashboard (`dist/dashboard`). */
export function defaultDashboardDir(): string {
  return path.join(packageRoot(), 'dist', 'dashboard');
}

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>opinference</title>
<p>The dashboard is not built. Run <code>npm run build</code> (or <code>npm ci</code>) and restart the gateway.</p>`;

/**
 * The dashboard: `GET /` is its page, `/assets/*` its script and styles, served from
 * `dist/dashboard` without authentication (the pages hold no data; every data call they make
 * carries the key the user signed in with). Only files present at start are routed, so any
 * other path keeps the gateway's JSON 404.
 */
export function registerDashboard(app: FastifyInstance, options: { root?: string } = {}): void {
  const root = options.root ?? defaultDashboardDir();
  if (!existsSync(path.join(root, 'index.html'))) {
    app.get('/', { config: { access: 'public' } }, async (_req, reply) => {
      reply.code(503).header('content-type', 'text/html; charset=utf-8').header('cache-control', 'no-store');
      return NOT_BUILT;
    });
    return;
  }
  app.register(async (scope) => {
    makeScopePublic(scope);
    await scope.register(fastifyStatic, {
      root,
      prefix: '/',
      wildcard: false,
      index: ['index.html'],
      preCompressed: true,
      cacheControl: false,
      dotfiles: 'ignore',
      // The compressed copies are sent in place of their originals, not under their own names;
      // source maps (a `--sourcemap` debug build) are never served.
      globIgnore: ['**/*.gz', '**/*.br', '**/*.map'],
      setHeaders(reply) {
        reply.headers(SECURITY_HEADERS);
      },
    });
  });
}
