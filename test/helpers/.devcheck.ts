import { readFileSync } from 'node:fs';
import { validateAgainst, validateChatCompletion, validateChatCompletionChunk, validateCompletion, validateCompletionChunk, validateErrorResponse } from './openapi.js';
import { parse } from 'yaml';
let t = Date.now();
console.log(validateChatCompletion(JSON.parse(readFileSync('/work/shared/fixtures/recorded/openai/openai-text.json','utf8'))), Date.now()-t);
t = Date.now();
const lines = readFileSync('/work/shared/fixtures/recorded/openai/openai-text.chunks.txt','utf8').split('\n').filter(Boolean);
let bad=0; for (const l of lines) { const e = validateChatCompletionChunk(JSON.parse(l)); if (e.length) { bad++; console.log(e);} }
console.log('chunks', lines.length, bad, Date.now()-t);
console.log(validateCompletion(JSON.parse(readFileSync('/work/shared/fixtures/recorded/openai/openai-completion-text.json','utf8'))));
for (const l of readFileSync('/work/shared/fixtures/recorded/openai/openai-completion-text.chunks.txt','utf8').split('\n').filter(Boolean)) { const j=JSON.parse(l); const e=validateCompletionChunk(j); if(e.length) console.log('cc',e); console.log('official', validateCompletion(j).length); break; }
console.log(validateErrorResponse(JSON.parse(readFileSync('/work/shared/fixtures/recorded/openai/reasoning-model-legacy-parameter-error.json','utf8'))));
const bogus = JSON.parse(lines[lines.length-2]!); bogus.choices[0].finish_reason='bogus';
console.log(validateChatCompletionChunk(bogus));
// compile all
const doc = parse(readFileSync('/work/shared/specs/openai-openapi.yaml','utf8')) as {components:{schemas:Record<string,unknown>}};
t=Date.now(); const fails: string[]=[];
for (const n of Object.keys(doc.components.schemas)) { try { validateAgainst(n, {}); } catch (e) { fails.push(n+': '+(e as Error).message.slice(0,200)); } }
console.log('compiled all', Date.now()-t, fails.length, fails.slice(0,10));
