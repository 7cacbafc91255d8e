/**
 * Provider kind `local` without a model: config and OP_LOCAL_MODEL, the engine's slot queue,
 * the tiny GGUF writer's layout, and an engine that cannot start (a missing model file).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { QueueFullError, SlotPool } from '../../src/providers/local/engine-slots.js';
import { engineFor, localEngineStatus, stopLocalEngines, type EngineStatus } from '../../src/providers/local/engine-supervisor.js';
import { localModelConfig, localModelName, retainLocalEngines, withLocalModel } from '../../src/providers/local/local-models.js';
import { engineStartConfig, isModelUri, localSettings } from '../../src/providers/local/local-settings.js';
import { startGateway } from '../helpers/gateway.js';
import { buildTinyLlamaGguf, TINY_VOCAB_SIZE } from '../helpers/tiny-gguf.js';

after(() => stopLocalEngines());

describe('local provider config', () => {
  test('model names from paths, URLs and hf: URIs', () => {
    assert.equal(localModelName('/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf'), 'qwen2.5-0.5b-instruct-q4_k_m');
    assert.equal(localModelName('./tiny.gguf'), 'tiny');
    assert.equal(localModelName('hf:bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M'), 'qwen2.5-0.5b-instruct-q4_k_m');
    assert.equal(localModelName('hf:bartowski/SmolLM2-135M-Instruct-GGUF'), 'smollm2-135m-instruct');
    assert.equal(localModelName('hf:user/repo/My Model.Q8_0.gguf'), 'my-model.q8_0');
    assert.equal(localModelName('https://example.com/files/Llama 3.gguf?download=true'), 'llama-3');
    assert.equal(isModelUri('hf:a/b'), true);
    assert.equal(isModelUri('https://x/y.gguf'), true);
    assert.equal(isModelUri('/m/x.gguf'), false);
    assert.equal(isModelUri('C:\\models\\x.gguf'), false);
  });

  test('OP_LOCAL_MODEL: one local provider and the model local/<name>, valid config', () => {
    const raw = localModelConfig({ OP_LOCAL_MODEL: 'models/Tiny-Model.gguf', OP_LOCAL_CONTEXT_SIZE: '2048', OP_LOCAL_PARALLEL: '3', OP_LOCAL_THREADS: '2', OP_LOCAL_GPU_LAYERS: 'auto' });
    assert.ok(raw);
    const config = parseConfig(raw, 'OP_LOCAL_MODEL');
    assert.equal(config.providers[0]?.kind, 'local');
    assert.deepEqual(localSettings(config.providers[0]!), { parallel_sequences: 3, max_queue: 16, context_size: 2048, gpu_layers: 'auto', threads: 2, load_wait_ms: 120_000 });
    const model = config.models[0]!;
    assert.equal(model.id, 'local/tiny-model');
    assert.equal(model.context_length, 2048);
    assert.equal(model.endpoints[0]?.upstream_model, path.resolve('models/Tiny-Model.gguf'));
    assert.equal(model.endpoints[0]?.supports_text_completions, true);
    assert.ok(model.endpoints[0]?.supported_parameters.includes('response_format'));
    // hf: URIs stay URIs.
    const hf = parseConfig(localModelConfig({ OP_LOCAL_MODEL: 'hf:owner/Some-GGUF:Q4_K_M' }), 'env');
    assert.equal(hf.models[0]?.id, 'local/some-q4_k_m');
    assert.equal(hf.models[0]?.endpoints[0]?.upstream_model, 'hf:owner/Some-GGUF:Q4_K_M');
    assert.equal(localModelConfig({}), null);
    assert.throws(() => localModelConfig({ OP_LOCAL_MODEL: 'x.gguf', OP_LOCAL_CONTEXT_SIZE: 'big' }), /OP_LOCAL_CONTEXT_SIZE must be a whole number/);
  });

  test('withLocalModel: applies only when no config file was read', () => {
    const empty = { config: parseConfig({}, 'defaults'), source: null };
    const fromFile = { config: parseConfig({}, 'file'), source: '/etc/opinference.yaml' };
    assert.equal(withLocalModel(empty, {}), empty);
    assert.equal(withLocalModel(fromFile, { OP_LOCAL_MODEL: 'x.gguf' }), fromFile);
    assert.equal(withLocalModel(empty, { OP_LOCAL_MODEL: 'x.gguf' }).config.models[0]?.id, 'local/x');
  });

  test('provider kind local is accepted; its `local` settings are strict', () => {
    const ok = parseConfig({
      providers: [{ id: 'mine', kind: 'local', local: { parallel_sequences: 4, max_queue: 0, gpu_layers: 'max', cache_dir: '/var/cache/models' } }],
      models: [{ id: 'local/m', context_length: 4096, endpoints: [{ provider: 'mine', upstream_model: 'hf:a/b:Q4_K_M' }] }],
    }, 'test');
    assert.equal(localSettings(ok.providers[0]!).max_queue, 0);
    assert.equal(localSettings(ok.providers[0]!).context_size, 4096);
    assert.throws(
      () => parseConfig({ providers: [{ id: 'mine', kind: 'local', local: { paralel_sequences: 2 } }] }, 'test'),
      (err: unknown) => err instanceof ConfigError && err.issues.includes('providers[0].local.paralel_sequences: unknown key'),
    );
    assert.throws(
      () => parseConfig({ providers: [{ id: 'mine', kind: 'local', local: { gpu_layers: -1 } }] }, 'test'),
      (err: unknown) => err instanceof ConfigError && err.issues.some((i) => i.startsWith('providers[0].local.gpu_layers')),
    );
  });
});

describe('engine registry', () => {
  test('one engine per (provider, source); a settings change replaces it; a reload stops the engines gone from the config', async () => {
    const config = (parallel: number, sources: string[]) => parseConfig({
      providers: [{ id: 'p', kind: 'local', local: { parallel_sequences: parallel } }],
      models: sources.map((src, i) => ({ id: `local/m${i}`, context_length: 1024, endpoints: [{ provider: 'p', upstream_model: src }] })),
    }, 'test');
    const start = (c: ReturnType<typeof config>, i: number) => {
      const { config: engine, loadWaitMs } = engineStartConfig(c.providers[0]!, c.models[i]!.endpoints[0]!.upstream_model);
      return engineFor(engine, loadWaitMs);
    };
    const first = config(2, ['/m/a.gguf', '/m/b.gguf']);
    const a = start(first, 0);
    assert.equal(start(first, 0), a, 'same settings, same engine');
    start(first, 1);
    assert.deepEqual(localEngineStatus().map((s) => [s.source, s.state]), [['/m/a.gguf', 'idle'], ['/m/b.gguf', 'idle']]);
    const changed = config(4, ['/m/a.gguf']);
    const a2 = start(changed, 0);
    assert.notEqual(a2, a);
    assert.equal(a.stopped, true);
    retainLocalEngines(changed);
    assert.deepEqual(localEngineStatus().map((s) => s.source), ['/m/a.gguf']);
    await stopLocalEngines();
    assert.deepEqual(localEngineStatus(), []);
  });
});

describe('engine slot queue', () => {
  test('FIFO hand-over, a bounded queue, and aborted waiters leave the queue', async () => {
    const pool = new SlotPool(['a'], 2);
    const first = await pool.acquire();
    assert.equal(pool.busy, 1);
    const order: string[] = [];
    const w1 = pool.acquire().then((s) => order.push(`w1:${s}`));
    const gone = new AbortController();
    const w2 = pool.acquire(gone.signal).catch((err: unknown) => order.push(`w2:${(err as Error).name}`));
    await assert.rejects(pool.acquire(), (err: unknown) => err instanceof QueueFullError && err.waiting === 2);
    gone.abort();
    await w2;
    assert.equal(pool.queued, 1);
    pool.release(first);
    await w1;
    assert.deepEqual(order, ['w2:AbortError', 'w1:a']);
    pool.release('a');
    assert.equal(pool.busy, 0);
  });
});

describe('tiny GGUF writer', () => {
  test('GGUF v3 header, aligned data, a few hundred KB', () => {
    const bytes = buildTinyLlamaGguf();
    assert.equal(bytes.subarray(0, 4).toString('ascii'), 'GGUF');
    assert.equal(bytes.readUInt32LE(4), 3);
    assert.equal(Number(bytes.readBigUInt64LE(8)), 3 + 2 * 9); // token_embd, output_norm, output + 9 per layer
    assert.ok(Number(bytes.readBigUInt64LE(16)) >= 20, 'metadata pairs');
    assert.equal(bytes.length % 32, 0);
    assert.ok(bytes.length > 200_000 && bytes.length < 800_000, `size ${bytes.length}`);
    assert.equal(TINY_VOCAB_SIZE, 260);
    // Same options, same bytes: the weights come from a seeded generator.
    assert.ok(buildTinyLlamaGguf().equals(bytes));
    assert.ok(!buildTinyLlamaGguf({ seed: 2 }).equals(bytes));
  });
});

describe('an engine that cannot start', () => {
  test('a missing model file: /ready is 503 naming it, requests get the terminal provider_misconfigured at once, no restart loop; a changed file is tried again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'op-missing-'));
    const missing = path.join(dir, 'nothing.gguf');
    const gw = await startGateway({
      providers: [{ id: 'broken', kind: 'local', local: { threads: 1 } }],
      models: [{ id: 'local/broken', context_length: 4096, endpoints: [{ provider: 'broken', upstream_model: missing }] }],
    });
    try {
      const ready = await fetch(`${gw.origin}/ready`);
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), { status: 'not ready', reason: `model file not found: ${missing} (model local/broken, provider broken)` });

      const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
      const ask = () => client.chat.completions.create({ model: 'local/broken', messages: [{ role: 'user', content: 'hi' }] }).then(
        () => assert.fail('must fail'),
        (e: unknown) => e,
      );
      for (let i = 0; i < 3; i++) {
        const err = await ask();
        assert.ok(err instanceof OpenAI.APIError, String(err));
        assert.equal(err.status, 502);
        const body = err.error as { code: string; kind: string; message: string };
        assert.equal(body.code, 'provider_misconfigured');
        assert.equal(body.kind, 'terminal');
        assert.equal(body.message, 'broken: the local engine cannot start: its model file nothing.gguf is missing or cannot be loaded; an operator must fix it (see /ready)');
      }
      await sleep(300);
      // One failure, no engine process started, no restart scheduled.
      assert.deepEqual(pick(localEngineStatus().find((s) => s.providerId === 'broken')), { state: 'failed', pid: null, failures: 1, lastError: `model file not found: ${missing}` });
      assert.equal((await fetch(`${gw.origin}/health`)).status, 200);

      // The file appears (not a model): tried again once, and it fails for good again, with why.
      writeFileSync(missing, 'this is not a GGUF file');
      assert.equal(((await ask()) as InstanceType<typeof OpenAI.APIError>).status, 502);
      const after = localEngineStatus().find((s) => s.providerId === 'broken');
      assert.equal(after?.state, 'failed');
      assert.equal(after?.failures, 2);
      assert.match(after?.lastError ?? '', /cannot be loaded|node-llama-cpp/);
      const notReady = (await (await fetch(`${gw.origin}/ready`)).json()) as { reason: string };
      assert.ok(notReady.reason.startsWith(`the local engine of provider broken cannot start for ${missing}: `), notReady.reason);
    } finally {
      await gw.close();
      await stopLocalEngines();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const pick = (s: EngineStatus | undefined) => s && { state: s.state, pid: s.pid, failures: s.failures, lastError: s.lastError };

const CLI = new URL('../../dist/src/cli.js', import.meta.url).pathname;
const runCli = promisify(execFile);

describe('opinference config check: local model files', { skip: existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build' }, () => {
  test('a local endpoint or OP_LOCAL_MODEL naming a file that is not there fails, naming the file and where it is configured', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'op-check-'));
    try {
      const present = path.join(dir, 'present.gguf');
      writeFileSync(present, 'GGUF');
      const gone = path.join(dir, 'gone.gguf');
      const file = path.join(dir, 'gw.yaml');
      writeFileSync(file, [
        'providers:',
        '  - id: laptop',
        '    kind: local',
        'models:',
        '  - id: local/present',
        '    context_length: 2048',
        '    endpoints: [{ provider: laptop, upstream_model: present.gguf }]',
        '  - id: local/gone',
        '    context_length: 2048',
        '    endpoints: [{ provider: laptop, upstream_model: ./gone.gguf }, { provider: laptop, upstream_model: "hf:someone/not-checked-GGUF" }]',
        '',
      ].join('\n'));
      const env = { ...process.env, OP_CONFIG: undefined, OP_LOCAL_MODEL: undefined };
      await assert.rejects(runCli(process.execPath, [CLI, 'config', 'check', '--config', file], { cwd: dir, env }), (e: { code?: number; stderr?: string }) => {
        assert.equal(e.code, 1);
        assert.equal(e.stderr, `opinference: ${file}: models[1].endpoints[0].upstream_model: model file not found: ${gone} (model local/gone, provider laptop)\n`);
        return true;
      });
      writeFileSync(gone, 'GGUF');
      const ok = await runCli(process.execPath, [CLI, 'config', 'check', '--config', file], { cwd: dir, env });
      assert.match(ok.stdout, /: ok — 1 providers, 2 models/);

      // No config file: OP_LOCAL_MODEL is checked the same way.
      await assert.rejects(runCli(process.execPath, [CLI, 'config', 'check'], { cwd: dir, env: { ...env, OP_LOCAL_MODEL: 'missing.gguf' } }), (e: { code?: number; stderr?: string }) => {
        assert.equal(e.code, 1);
        assert.equal(e.stderr, `opinference: OP_LOCAL_MODEL: model file not found: ${path.join(dir, 'missing.gguf')} (model local/missing, provider local)\n`);
        return true;
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
