// ESLint flat config: typescript-eslint's recommended rules over the whole project, and the
// layers of docs/architecture.md: a folder of src/ may import only from the layers below it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * src/ folders from the top layer down; a folder never imports from a layer above its own. Every
 * top folder of src/ is listed (the lint fails on one that is not, see below); `dashboard/` is
 * the browser bundle, apart from the layers: it imports nothing of src/ outside itself.
 */
const LAYERS = [
  ['cli.ts', 'serve-workers.ts'],
  ['server'],
  ['telemetry'],
  ['pipeline'],
  ['ingress'],
  ['routing', 'limits', 'store', 'upstream', 'cache', 'mcp', 'alerts'],
  ['providers'],
  ['accounting'],
  ['core'],
  ['config', 'errors', 'util', 'redis'],
];
const APART = ['dashboard'];

// A new top folder (or file) of src/ must be given a layer here (or be declared apart): until it
// is, every one of its files fails the lint with that message (`unlistedRules`, below).
const listed = new Set([...LAYERS.flat(), ...APART]);
// Entries of src/ that hold code (a .ts file, or a folder with one), not dotfiles or stray files.
const holdsCode = (entry) => !entry.name.startsWith('.') && (entry.isDirectory() ? readdirSync(fileURLToPath(new globalThis.URL(`./src/${entry.name}/`, import.meta.url)), { recursive: true }).some((f) => String(f).endsWith('.ts')) : entry.name.endsWith('.ts'));
const unlisted = readdirSync(fileURLToPath(new globalThis.URL('./src/', import.meta.url)), { withFileTypes: true }).filter((e) => !listed.has(e.name) && holdsCode(e)).map((e) => e.name);

const glob = (f) => (f.endsWith('.ts') ? `src/${f}` : `src/${f}/**/*.ts`);
/** Import patterns that name a file in folder (or the file) `f` of src/, at any depth. */
const importsOf = (f) => (f.endsWith('.ts') ? [`**/${f.replace(/\.ts$/, '.js')}`] : [`**/${f}/*`, `**/${f}/**`]);

/** Fastify is the server's: below `telemetry/` (which reads Fastify's tracing channels) nothing imports it. */
const NO_FASTIFY = { group: ['fastify', '@fastify/*'], message: 'only src/server/ (and telemetry/, for its tracing channels) may import Fastify: lower layers see the request through ClientSink and their own types (docs/architecture.md)' };
const FASTIFY_LAYERS = new Set(['cli.ts', 'serve-workers.ts', 'server', 'telemetry']);

/** npm packages whose paths look like a layer's folder (`@modelcontextprotocol/sdk/server/…`): never matched by the layer patterns. */
const PACKAGES_APART = ['!@modelcontextprotocol/sdk/**'];

const layerRules = LAYERS.slice(1).map((folders, i) => {
  const above = LAYERS.slice(0, i + 1).flat();
  return {
    files: folders.map(glob),
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          {
            // Packages are not layers: the MCP SDK's own `server/` and `client/` folders are not src/server/.
            group: [...above.flatMap(importsOf), ...PACKAGES_APART],
            message: `src/${folders.join(', src/')} may not import from a higher layer (${above.join(', ')}): see docs/architecture.md`,
          },
          ...(folders.some((f) => FASTIFY_LAYERS.has(f)) ? [] : [NO_FASTIFY]),
        ],
      }],
    },
  };
});

/** Rooms inside one folder: `pipeline/state/` (what the stages share) imports no stage or attempt. */
const roomRules = [
  {
    files: ['src/pipeline/state/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: [...LAYERS.slice(0, 3).flat().flatMap(importsOf), '**/stages/*', '**/attempt/*'],
          message: 'src/pipeline/state/ holds what the stages share: it imports no stage, no attempt and no higher layer (see src/pipeline/README.md)',
        }, NO_FASTIFY],
      }],
    },
  },
  {
    files: APART.map(glob),
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: [...LAYERS.flat().flatMap(importsOf)],
          message: 'src/dashboard/ is the browser bundle: it imports nothing of src/ outside itself',
        }],
      }],
    },
  },
];

/**
 * The provider kinds' config schemas (src/providers/<kind>/<kind>-config-schema.ts, listed in
 * src/providers/config-schemas.ts) sit in providers/ but are read by config/schema.ts, the
 * ground layer, which assembles the union of kinds: so they import nothing but `zod` and
 * src/config/ fragments (never schema.ts or load.ts, which import them), and config/schema.ts
 * is the one file of config/ allowed to import them (and nothing else of providers/).
 */
const configFragment = String.raw`config/(?!(schema|load)\.js$)[\w.-]+\.js$`;
const kindSchemaRules = [
  {
    files: ['src/config/schema.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          {
            group: LAYERS.slice(0, -1).flat().filter((f) => f !== 'providers').flatMap(importsOf),
            message: 'src/config/ may not import from a higher layer: see docs/architecture.md',
          },
          NO_FASTIFY,
          {
            regex: String.raw`(^|/)providers/(?!config-schemas\.js$|[\w-]+/[\w-]+-config-schema\.js$)`,
            message: 'src/config/schema.ts may import from src/providers/ only config-schemas.ts and the <kind>/<kind>-config-schema.ts files (see src/config/README.md)',
          },
        ],
      }],
    },
  },
  {
    files: ['src/providers/*/*-config-schema.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          regex: String.raw`^(?!zod$|\.\./\.\./${configFragment})`,
          message: 'a provider kind\'s config schema is read by src/config/schema.ts: it imports only zod and src/config/ fragments (not schema.ts or load.ts; see src/providers/README.md)',
        }],
      }],
    },
  },
  {
    files: ['src/providers/config-schemas.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          regex: String.raw`^(?!zod$|\.\./${configFragment}|\./[\w-]+/[\w-]+-config-schema\.js$)`,
          message: 'src/providers/config-schemas.ts is read by src/config/schema.ts: it imports only zod, src/config/ fragments (not schema.ts or load.ts) and the kinds\' <kind>/<kind>-config-schema.ts files',
        }],
      }],
    },
  },
];

/**
 * What `no-restricted-imports` cannot see: an `import()` of another folder (or of a computed
 * path), `typeof import('../…')` and `createRequire` would pass the layers unchecked; an
 * `import()` of a file of the same folder (telemetry.ts loading otel.js lazily) stays allowed.
 */
const noLayerBypass = {
  files: ['src/**/*.ts'],
  rules: {
    'no-restricted-syntax': ['error',
      { selector: "ImportExpression[source.type!='Literal']", message: 'a computed import() bypasses the layer lint: import statically (docs/architecture.md)' },
      { selector: 'ImportExpression[source.value=/^\\.\\.\\//]', message: 'import() of another folder bypasses the layer lint: import it statically (docs/architecture.md)' },
      { selector: 'TSImportType[argument.literal.value=/^\\.\\.\\//]', message: "typeof import('../…') bypasses the layer lint: use an import type statement (docs/architecture.md)" },
      { selector: "CallExpression[callee.name='createRequire']", message: 'createRequire bypasses the layer lint: import statically (docs/architecture.md)' },
    ],
  },
};

/** Each file of a top folder or file of src/ missing from LAYERS / APART is an error saying so. */
const unlistedRules = unlisted.map((f) => ({
  files: [glob(f)],
  rules: {
    'no-restricted-syntax': ['error', { selector: 'Program', message: `src/${f} has no layer in LAYERS (eslint.config.js): add it there (see docs/architecture.md)` }],
  },
}));

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  ...layerRules,
  ...roomRules,
  ...kindSchemaRules,
  noLayerBypass,
  ...unlistedRules,
);
