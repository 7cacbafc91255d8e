// Builds the dashboard (src/dashboard → dist/dashboard) with esbuild: one JS bundle and one CSS
// file under assets/, index.html beside them, and .gz/.br copies that @fastify/static serves to
// browsers that accept them. Run by `npm run build` (after the dashboard typecheck); the
// dashboard test calls buildDashboard() itself so it always tests the current source.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sourceDir = path.join(root, 'src', 'dashboard');

/** Where `npm run build` puts the dashboard (the gateway serves it from there). */
export const DEFAULT_OUT_DIR = path.join(root, 'dist', 'dashboard');

/**
 * Bundle the dashboard into `outDir` (emptied first). Returns the files written, relative to it.
 * Source maps only with `sourcemap: true` (`--sourcemap`, for debugging): a production build
 * ships none, so the gateway has no map of the dashboard's source to serve.
 */
export async function buildDashboard(outDir: string = DEFAULT_OUT_DIR, options: { sourcemap?: boolean } = {}): Promise<string[]> {
  rmSync(outDir, { recursive: true, force: true });
  const assets = path.join(outDir, 'assets');
  mkdirSync(assets, { recursive: true });
  const result = await build({
    entryPoints: { app: path.join(sourceDir, 'main.ts'), style: path.join(sourceDir, 'styles.css') },
    outdir: assets,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    minify: true,
    sourcemap: options.sourcemap === true ? 'linked' : false,
    legalComments: 'linked',
    logLevel: 'warning',
    metafile: true,
  });
  if (result.errors.length > 0) throw new Error('dashboard build failed');
  writeFileSync(path.join(outDir, 'index.html'), readFileSync(path.join(sourceDir, 'index.html')));
  const written: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else written.push(path.relative(outDir, full));
    }
  };
  walk(outDir);
  for (const rel of written) {
    if (!/\.(js|css|html)$/.test(rel)) continue;
    const body = readFileSync(path.join(outDir, rel));
    writeFileSync(path.join(outDir, `${rel}.gz`), gzipSync(body, { level: 9 }));
    writeFileSync(path.join(outDir, `${rel}.br`), brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } }));
  }
  return written.sort();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const dir = args.find((a) => !a.startsWith('--'));
  const outDir = dir ? path.resolve(dir) : DEFAULT_OUT_DIR;
  const files = await buildDashboard(outDir, { sourcemap: args.includes('--sourcemap') });
  process.stdout.write(`dashboard: ${files.length} files in ${path.relative(process.cwd(), outDir) || '.'}\n`);
}
