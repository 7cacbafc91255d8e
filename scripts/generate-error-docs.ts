// Writes docs/errors.md from the error catalog (npm run docs:errors).
import { writeFileSync } from 'node:fs';
import { renderErrorDocs } from '../src/errors/render-docs.js';

const target = new URL('../docs/errors.md', import.meta.url);
writeFileSync(target, renderErrorDocs());
process.stdout.write('wrote docs/errors.md\n');
