import { readFileSync } from 'node:fs';
import { validateAgainst } from './.strict.js';
import { parse } from 'yaml';
const doc = parse(readFileSync('/work/shared/specs/openai-openapi.yaml','utf8')) as {components:{schemas:Record<string,unknown>}};
const fails: string[]=[];
for (const n of [...Object.keys(doc.components.schemas), 'CompletionStreamChunk']) { try { validateAgainst(n, {}); } catch (e) { fails.push(n+': '+(e as Error).message.slice(0,300)); } }
console.log(fails.length, fails.slice(0,10));
