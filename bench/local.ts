/**
 * Local engine benchmark (`npx tsx bench/local.ts`): output tokens per second and time to first
 * token of a streamed chat completion on a GGUF model, three ways:
 *   - in-process: node-llama-cpp's LlamaChat in this process (no HTTP at all);
 *   - engine: the gateway's engine process called directly on its loopback URL (SSE);
 *   - gateway: the same engine through the gateway (auth, routing, relay, records).
 * The model is the tiny random-weight llama of the tests (written to a temp folder), or any GGUF
 * file given as BENCH_LOCAL_MODEL. Prints a Markdown table (medians over the runs).
 *
 * Settings (environment): BENCH_LOCAL_MODEL (path), BENCH_LOCAL_RUNS (10), BENCH_LOCAL_TOKENS
 * (256 output tokens per run), BENCH_LOCAL_THREADS (1; 0 = the engine's default),
 * BENCH_LOCAL_CONTEXT (4096).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { parseConfig } from '../src/config/load.js';
import { engineFor, stopLocalEngines } from '../src/providers/local/engine-supervisor.js';
import { engineStartConfig } from '../src/providers/local/local-settings.js';
import { localModelConfig } from '../src/providers/local/local-models.js';
import { buildGateway } from '../src/server/app.js';
import { openDatabase } from '../src/store/database.js';
import { migrate } from '../src/store/migrations.js';
import { writeTinyLlamaGguf } from '../test/helpers/tiny-gguf.js';

const envInt = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isInteger(v) && v >= 0 && process.env[name] !== '' && process.env[name] !== undefined ? v : fallback;
};
const RUNS = envInt('BENCH_LOCAL_RUNS', 10);
const TOKENS = envInt('BENCH_LOCAL_TOKENS', 256);
const THREADS = envInt('BENCH_LOCAL_THREADS', 1);
const CONTEXT = envInt('BENCH_LOCAL_CONTEXT', 4096);
const MESSAGES = [{ role: 'user', content: 'Write a long story about a lighthouse keeper.' }];

/** One measured generation. */
interface Sample {
  ttftMs: number;
  totalMs: number;
  tokens: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Stream one chat completion over HTTP; time to the first content chunk and to the end. */
async function httpStream(url: string, token: string, model: string, seed: number): Promise<Sample> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ model, messages: MESSAGES, max_tokens: TOKENS, temperature: 1, seed, stream: true, stream_options: { include_usage: true } }),
  });
  if (res.status !== 200 || !res.body) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  let ttft = -1;
  let tokens = 0;
  let buffered = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffered += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.replace(/^data: /, '');
      if (data === '[DONE]' || data.startsWith(':')) continue;
      const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; usage?: { completion_tokens?: number } };
      if (ttft < 0 && chunk.choices?.[0]?.delta?.content) ttft = performance.now() - started;
      if (chunk.usage?.completion_tokens) tokens = chunk.usage.completion_tokens;
    }
  }
  return { ttftMs: ttft, totalMs: performance.now() - started, tokens };
}

function row(name: string, samples: Sample[]): string {
  const ttft = median(samples.map((s) => s.ttftMs));
  const tps = median(samples.map((s) => (s.tokens - 1) / ((s.totalMs - s.ttftMs) / 1000)));
  const total = median(samples.map((s) => s.totalMs));
  const tokens = median(samples.map((s) => s.tokens));
  return `| ${name} | ${ttft.toFixed(1)} | ${tps.toFixed(0)} | ${total.toFixed(1)} | ${tokens} |`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'op-bench-local-'));
  const modelPath = process.env.BENCH_LOCAL_MODEL ? path.resolve(process.env.BENCH_LOCAL_MODEL) : path.join(dir, 'tiny-llama.gguf');
  if (!process.env.BENCH_LOCAL_MODEL) writeTinyLlamaGguf(modelPath, { contextLength: CONTEXT });
  const env: NodeJS.ProcessEnv = { OP_LOCAL_MODEL: modelPath, OP_LOCAL_CONTEXT_SIZE: String(CONTEXT), OP_LOCAL_PARALLEL: '2' };
  if (THREADS > 0) env.OP_LOCAL_THREADS = String(THREADS);
  const config = parseConfig(localModelConfig(env), 'bench');
  const modelId = config.models[0]!.id;
  const provider = config.providers[0]!;
  const store = openDatabase(`sqlite:${path.join(dir, 'bench.db')}`);
  await migrate(store.db);
  const gateway = buildGateway({ loaded: { config, source: null }, db: store.db, adminKey: 'bench-admin', logger: false });
  await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const gatewayUrl = `http://127.0.0.1:${(gateway.app.server.address() as AddressInfo).port}/v1/chat/completions`;

  try {
    // The engine the gateway uses (same supervisor), and its private address.
    const { config: startConfig, loadWaitMs } = engineStartConfig(provider, config.models[0]!.endpoints[0]!.upstream_model);
    const supervisor = engineFor(startConfig, loadWaitMs);
    const info = await supervisor.whenReady();
    const engine = await supervisor.endpoint();
    const engineUrl = `${engine.origin}/v1/chat/completions`;

    // In-process baseline with the same settings.
    const lib = await import('node-llama-cpp');
    const llama = await lib.getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: lib.LlamaLogLevel.error });
    const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
    const context = await model.createContext({ sequences: 1, contextSize: info.contextSize, ...(THREADS > 0 ? { threads: THREADS } : {}) });
    const chat = new lib.LlamaChat({ contextSequence: context.getSequence(), chatWrapper: lib.resolveChatWrapper(model) ?? new lib.GeneralChatWrapper() });
    const inProcess = async (seed: number): Promise<Sample> => {
      const started = performance.now();
      let ttft = -1;
      const before = chat.sequence.tokenMeter.usedOutputTokens;
      await chat.generateResponse([{ type: 'user', text: MESSAGES[0]!.content }, { type: 'model', response: [] }], {
        maxTokens: TOKENS, temperature: 1, topK: 0, seed, repeatPenalty: false,
        onTextChunk: (t) => {
          if (ttft < 0 && t !== '') ttft = performance.now() - started;
        },
      });
      return { ttftMs: ttft, totalMs: performance.now() - started, tokens: chat.sequence.tokenMeter.usedOutputTokens - before };
    };

    const ways: Array<[string, (seed: number) => Promise<Sample>]> = [
      ['in-process (node-llama-cpp LlamaChat)', inProcess],
      ['engine process, direct HTTP', (seed) => httpStream(engineUrl, engine.token, 'direct', seed)],
      ['through the gateway', (seed) => httpStream(gatewayUrl, 'bench-admin', modelId, seed)],
    ];
    const results = new Map<string, Sample[]>(ways.map(([name]) => [name, []]));
    for (const [, run] of ways) await run(999); // warm-up
    // Interleaved, so drift (thermal, other load) hits every way alike.
    for (let i = 0; i < RUNS; i++) for (const [name, run] of ways) results.get(name)!.push(await run(i + 1));

    // Two streams at once through the gateway (the engine batches its 2 sequences).
    const parallelStarted = performance.now();
    const pair = await Promise.all([httpStream(gatewayUrl, 'bench-admin', modelId, 1), httpStream(gatewayUrl, 'bench-admin', modelId, 2)]);
    const pairSeconds = (performance.now() - parallelStarted) / 1000;
    const pairTps = pair.reduce((n, s) => n + s.tokens, 0) / pairSeconds;

    const lines = [
      `## Local engine (${path.basename(modelPath)}, ${TOKENS} output tokens, ${THREADS || 'default'} thread(s), ${RUNS} runs, medians)`,
      '',
      `Machine: ${os.cpus()[0]?.model ?? 'unknown CPU'} × ${os.cpus().length}, Node ${process.version}; engine context ${info.contextSize}, model load ${info.loadMs} ms.`,
      '',
      '| path | TTFT ms | output tokens/s | total ms | tokens |',
      '|---|---:|---:|---:|---:|',
      ...ways.map(([name]) => row(name, results.get(name)!)),
      '',
      `Two concurrent streams through the gateway: ${pairTps.toFixed(0)} output tokens/s in total.`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    await context.dispose();
    await model.dispose();
  } finally {
    await gateway.close();
    await stopLocalEngines();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
