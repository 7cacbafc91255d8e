/**
 * The validation stage on its own (`npx tsx bench/validate.ts`, issue #12): CPU µs per call of
 * what `serveGeneration` runs before admission (`checkBodyBounds`, the API's `parse`, its
 * `toChat`, `resolveAliases`, `resolveModelNames`), and of `parse` alone, for the request
 * shapes in {@link CASES}. Each case runs a warm-up, then several rounds of many calls; the
 * report gives the median round (CPU time from `process.cpuUsage()`, user + system, so other
 * processes on the machine do not count, though they still disturb caches).
 *
 * The bodies are parsed JSON (as the server hands them over) and reused: no stage mutates its
 * input. The Responses `prepare` step is left out (it is async and, without
 * `previous_response_id` or `item_reference` items, only settles `store`).
 *
 * Environment:
 *   BENCH_VALIDATE_MS     CPU milliseconds per round (default 300)
 *   BENCH_VALIDATE_ROUNDS rounds per case (default 7)
 *   BENCH_VALIDATE_ONLY   run only the cases whose id contains this text
 */
import { messagesIngress } from '../src/ingress/anthropic/messages/messages-adapter.js';
import { checkBodyBounds } from '../src/ingress/body-bounds.js';
import { chatIngress } from '../src/ingress/openai/chat/chat-adapter.js';
import { responsesIngress } from '../src/ingress/openai/responses/responses-adapter.js';
import type { GenerationIngress } from '../src/ingress/types.js';
import type { Catalog } from '../src/routing/catalog.js';
import { resolveAliases } from '../src/routing/catalog.js';
import { resolveModelNames } from '../src/routing/model-names.js';
import type { ModelConfig } from '../src/config/schema.js';
import { prose } from './prose.js';

const ROUND_MS = Number(process.env.BENCH_VALIDATE_MS ?? 300);
const ROUNDS = Number(process.env.BENCH_VALIDATE_ROUNDS ?? 7);
const ONLY = process.env.BENCH_VALIDATE_ONLY;

/** The config defaults (`server.max_messages`, `server.max_content_parts`). */
const BOUNDS = { maxMessages: 50_000, maxContentParts: 50_000 };
const MODEL = 'bench/model';
const catalog: Catalog = {
  models: new Map([[MODEL, { model: { id: MODEL } as ModelConfig, endpoints: [] }]]),
  empty: false,
  aliases: new Map([['bench-alias', MODEL]]),
};
const names = { presets: [], model_variants: [] };


const weatherParameters = { type: 'object', properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] };

/** (b): streaming, two tools, one tool call round trip in the history. */
const chatTools = {
  model: MODEL,
  stream: true,
  stream_options: { include_usage: true },
  max_tokens: 256,
  temperature: 0.2,
  messages: [
    { role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'What is the weather in Paris?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21,"sky":"clear"}' },
  ],
  tools: [
    { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city', parameters: weatherParameters } },
    { type: 'function', function: { name: 'get_time', description: 'Local time of a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  ],
  tool_choice: 'auto',
};

/** An agent's history: `turns` tool call round trips. */
function chatHistory(turns: number): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'system', content: 'You are a coding agent.' }, { role: 'user', content: 'Fix the failing test.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'assistant', content: `Step ${i}: reading the file.`, tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: `{"path":"src/file-${i}.ts"}` } }] });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: prose(400) });
  }
  return { model: MODEL, stream: true, max_tokens: 4096, messages, tools: chatTools.tools };
}

const responsesSmall = { model: MODEL, input: 'hi', max_output_tokens: 256 };

function responsesHistory(turns: number): Record<string, unknown> {
  const input: unknown[] = [{ role: 'user', content: [{ type: 'input_text', text: 'Fix the failing test.' }] }];
  for (let i = 0; i < turns; i++) {
    input.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `Step ${i}: reading the file.` }] });
    input.push({ type: 'function_call', call_id: `call_${i}`, name: 'read_file', arguments: `{"path":"src/file-${i}.ts"}` });
    input.push({ type: 'function_call_output', call_id: `call_${i}`, output: prose(400) });
  }
  return {
    model: MODEL,
    instructions: 'You are a coding agent.',
    input,
    stream: true,
    store: false,
    tools: [{ type: 'function', name: 'read_file', description: 'Read a file', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }, strict: false }],
    reasoning: { effort: 'medium', summary: 'auto' },
  };
}

const messagesSmall = { model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'hi' }] };

function messagesHistory(turns: number): Record<string, unknown> {
  const messages: unknown[] = [{ role: 'user', content: [{ type: 'text', text: 'Fix the failing test.' }] }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Step ${i}: reading the file.` }, { type: 'tool_use', id: `toolu_${i}`, name: 'read_file', input: { path: `src/file-${i}.ts` } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${i}`, content: prose(400) }] });
  }
  return {
    model: MODEL,
    max_tokens: 4096,
    stream: true,
    system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
    messages,
    tools: [{ name: 'read_file', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } }],
  };
}

interface Case {
  id: string;
  name: string;
  ingress: GenerationIngress<never>;
  body: unknown;
}

const CASES: Case[] = [
  { id: 'chat-small', name: '(a) chat: model, one user message, max_tokens', ingress: chatIngress as GenerationIngress<never>, body: { model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 256 } },
  { id: 'chat-tools', name: '(b) chat: stream, 2 tools, one tool call round trip', ingress: chatIngress as GenerationIngress<never>, body: chatTools },
  { id: 'chat-16k', name: '(c) chat: one 16 KB user message', ingress: chatIngress as GenerationIngress<never>, body: { model: MODEL, messages: [{ role: 'user', content: prose(16_000) }], max_tokens: 256 } },
  { id: 'chat-history', name: 'chat: agent history, 50 tool round trips (102 messages)', ingress: chatIngress as GenerationIngress<never>, body: chatHistory(50) },
  { id: 'responses-small', name: '(d) responses: model, string input, max_output_tokens', ingress: responsesIngress as GenerationIngress<never>, body: responsesSmall },
  { id: 'responses-history', name: 'responses: agent history, 50 tool round trips (151 items)', ingress: responsesIngress as GenerationIngress<never>, body: responsesHistory(50) },
  { id: 'messages-small', name: '(d) messages: model, one user message, max_tokens', ingress: messagesIngress as GenerationIngress<never>, body: messagesSmall },
  { id: 'messages-history', name: 'messages: agent history, 50 tool round trips (101 messages)', ingress: messagesIngress as GenerationIngress<never>, body: messagesHistory(50) },
];

/** The validation stage of `serveGeneration` (without the async `prepare`). */
function stage(ingress: GenerationIngress<never>, body: unknown): unknown {
  checkBodyBounds(body, ingress.api, BOUNDS);
  const request = ingress.parse(body);
  const chat = resolveAliases(catalog, ingress.toChat(request));
  resolveModelNames(chat, catalog, names);
  return chat;
}

function parseOnly(ingress: GenerationIngress<never>, body: unknown): unknown {
  return ingress.parse(body);
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

let sink: unknown;

/** Median CPU µs per call over {@link ROUNDS} rounds of about {@link ROUND_MS} each. */
function measure(fn: (ingress: GenerationIngress<never>, body: unknown) => unknown, c: Case): number {
  // Calibrate a batch size that takes ~5 ms, then warm up for one round's worth.
  let batch = 1;
  for (;;) {
    const t0 = cpuMs();
    for (let i = 0; i < batch; i++) sink = fn(c.ingress, c.body);
    if (cpuMs() - t0 >= 5) break;
    batch *= 2;
  }
  const warmEnd = cpuMs() + ROUND_MS;
  while (cpuMs() < warmEnd) for (let i = 0; i < batch; i++) sink = fn(c.ingress, c.body);
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = cpuMs();
    let calls = 0;
    while (cpuMs() - t0 < ROUND_MS) {
      for (let i = 0; i < batch; i++) sink = fn(c.ingress, c.body);
      calls += batch;
    }
    perCall.push(((cpuMs() - t0) * 1000) / calls);
  }
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(perCall.length / 2)]!;
}

const rows: string[] = [];
for (const c of CASES) {
  if (ONLY && !c.id.includes(ONLY)) continue;
  stage(c.ingress, c.body); // throws if a case is not a valid request
  const whole = measure(stage, c);
  const parse = measure(parseOnly, c);
  rows.push(`| ${c.id} | ${c.name} | ${JSON.stringify(c.body).length.toLocaleString('en-US')} | ${whole.toFixed(1)} | ${parse.toFixed(1)} |`);
  process.stderr.write(`${c.id}: ${whole.toFixed(1)} µs (parse ${parse.toFixed(1)} µs)\n`);
}
void sink;
console.log(`Node ${process.version}, ${ROUNDS} rounds of ${ROUND_MS} ms CPU per case, median round\n`);
console.log('| case | request | body bytes | validation stage µs/call | parse only µs/call |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const r of rows) console.log(r);
