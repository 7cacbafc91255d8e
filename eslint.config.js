// ESLint flat config: typescript-eslint's recommended rules over the whole project, and the
// layers of docs/architecture.md: a folder of src/ may import only from the layers below it.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** src/ folders from the top layer down; a folder never imports from a layer above its own. */
const LAYERS = [
  ['server'],
  ['telemetry'],
  ['pipeline'],
  ['ingress'],
  ['routing', 'limits', 'store', 'relay', 'cache'],
  ['providers'],
  ['accounting'],
  ['core'],
  ['config', 'errors', 'util'],
];

const layerRules = LAYERS.slice(1).map((folders, i) => {
  const above = LAYERS.slice(0, i + 1).flat();
  return {
    files: folders.map((f) => `src/${f}/**/*.ts`),
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          group: above.map((f) => `**/${f}/*`),
          message: `src/${folders.join(', src/')} may not import from a higher layer (${above.join(', ')}): see docs/architecture.md`,
        }],
      }],
    },
  };
});

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
);
