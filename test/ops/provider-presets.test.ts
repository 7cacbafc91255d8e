/**
 * Provider presets (issue 20 item 5): `preset: groq` in a `providers[]` entry fills in the kind,
 * `base_url`, `dialect` and the key's variable; the entry's own fields win; a contradicting
 * kind or an unknown preset is one path-named issue in the one report; `config check` shows
 * what each preset expanded to and never the key; a gateway with `preset: vllm` answers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { describePresetExpansions, expandProviderPresets, KEY_HEADER, PROVIDER_PRESET_NAMES } from '../../src/config/provider-presets.js';
import type { ProviderConfig } from '../../src/config/schema.js';
import { headersFor } from '../../src/providers/openai/convert-to-openai-request.js';
import { anthropicHeaders } from '../../src/providers/anthropic/convert-to-anthropic-request.js';
import { geminiHeaders } from '../../src/providers/gemini/convert-to-gemini-request.js';
import { CLI } from '../helpers/cli-process.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

/** Every preset's expansion, written out (not read from the table: a changed value must fail here). */
const EXPECTED: Record<string, { kind: string; base_url: string; dialect?: string; key_env?: string }> = {
  openai: { kind: 'openai', base_url: 'https://api.openai.com/v1', dialect: 'openai', key_env: 'OPENAI_API_KEY' },
  anthropic: { kind: 'anthropic', base_url: 'https://api.anthropic.com', key_env: 'ANTHROPIC_API_KEY' },
  gemini: { kind: 'gemini', base_url: 'https://generativelanguage.googleapis.com', key_env: 'GEMINI_API_KEY' },
  openrouter: { kind: 'openai', base_url: 'https://openrouter.ai/api/v1', dialect: 'openrouter', key_env: 'OPENROUTER_API_KEY' },
  deepseek: { kind: 'openai', base_url: 'https://api.deepseek.com', dialect: 'deepseek', key_env: 'DEEPSEEK_API_KEY' },
  xai: { kind: 'openai', base_url: 'https://api.x.ai/v1', dialect: 'openai', key_env: 'XAI_API_KEY' },
  mistral: { kind: 'openai', base_url: 'https://api.mistral.ai/v1', dialect: 'mistral', key_env: 'MISTRAL_API_KEY' },
  together: { kind: 'openai', base_url: 'https://api.together.ai/v1', dialect: 'openai', key_env: 'TOGETHER_API_KEY' },
  fireworks: { kind: 'openai', base_url: 'https://api.fireworks.ai/inference/v1', dialect: 'openai', key_env: 'FIREWORKS_API_KEY' },
  cerebras: { kind: 'openai', base_url: 'https://api.cerebras.ai/v1', dialect: 'openai', key_env: 'CEREBRAS_API_KEY' },
  groq: { kind: 'openai', base_url: 'https://api.groq.com/openai/v1', dialect: 'groq', key_env: 'GROQ_API_KEY' },
  ollama: { kind: 'openai', base_url: 'http://127.0.0.1:11434/v1', dialect: 'ollama' },
  vllm: { kind: 'openai', base_url: 'http://127.0.0.1:8000/v1', dialect: 'vllm' },
  lmstudio: { kind: 'openai', base_url: 'http://127.0.0.1:1234/v1', dialect: 'openai' },
  llamacpp: { kind: 'openai', base_url: 'http://127.0.0.1:8080/v1', dialect: 'llamacpp' },
};

function issuesOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.issues;
  }
  assert.fail('expected a ConfigError');
}

const one = (entry: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): ProviderConfig => parseConfig({ providers: [{ id: 'p', ...entry }] }, 'x.yaml', env).providers[0]!;

describe('provider presets: expansion', () => {
  test('the table lists exactly the presets written out here', () => {
    assert.deepEqual([...PROVIDER_PRESET_NAMES].sort(), Object.keys(EXPECTED).sort());
  });

  for (const [name, want] of Object.entries(EXPECTED)) {
    test(`preset ${name} → kind ${want.kind}, ${want.base_url}${want.dialect ? `, dialect ${want.dialect}` : ''}, key from ${want.key_env ?? 'nowhere (none needed)'}`, () => {
      const env = want.key_env ? { [want.key_env]: `secret-${name}` } : {};
      const p = one({ preset: name }, env);
      assert.equal(p.preset, name);
      assert.equal(p.kind, want.kind);
      assert.equal(p.base_url, want.base_url);
      if (want.dialect) assert.equal(p.dialect, want.dialect);
      assert.equal(p.api_key, want.key_env ? `secret-${name}` : undefined);
      // Before substitution the key default is the `${VAR}` text, as a file would write it.
      const raw = expandProviderPresets({ providers: [{ id: 'p', preset: name }] }).config as { providers: Record<string, unknown>[] };
      assert.deepEqual(raw.providers[0], {
        kind: want.kind,
        base_url: want.base_url,
        ...(want.dialect ? { dialect: want.dialect } : {}),
        ...(want.key_env ? { api_key: `\${${want.key_env}}` } : {}),
        id: 'p',
        preset: name,
      });
    });
  }

  test('fields the entry sets win: base_url, dialect, api_key (an empty one too), headers', () => {
    const vllm = one({ preset: 'vllm', base_url: 'http://10.0.0.5:9000/v1', api_key: 'vllm-token' });
    assert.equal(vllm.base_url, 'http://10.0.0.5:9000/v1');
    assert.equal(vllm.api_key, 'vllm-token');
    assert.equal(vllm.dialect, 'vllm');
    const groq = one({ preset: 'groq', dialect: 'openai', api_key: '${MY_GROQ_KEY}', headers: { 'x-team': 'a' } }, { MY_GROQ_KEY: 'gsk-mine', GROQ_API_KEY: 'gsk-default' });
    assert.equal(groq.dialect, 'openai');
    assert.equal(groq.api_key, 'gsk-mine');
    assert.deepEqual(groq.headers, { 'x-team': 'a' });
    assert.equal(one({ preset: 'openai', api_key: '' }).api_key, '');
    // The same kind as the preset's is no contradiction.
    assert.equal(one({ preset: 'anthropic', kind: 'anthropic', api_key: 'k' }).kind, 'anthropic');
  });

  test('entries without a preset are left exactly as they were (same object)', () => {
    const raw = { providers: [{ id: 'up', kind: 'openai', base_url: 'http://127.0.0.1:9/v1' }] };
    assert.equal(expandProviderPresets(raw).config, raw);
  });

  test('a cloud preset\'s key variable unset: the usual path-named issue, saying the preset reads it', () => {
    assert.deepEqual(issuesOf(() => parseConfig({ providers: [{ id: 'g', preset: 'groq' }] }, 'x.yaml', {})), [
      'providers[0].api_key: environment variable GROQ_API_KEY is not set (preset "groq" reads the key from it when the entry has no api_key: set GROQ_API_KEY, or give api_key)',
    ]);
    // Without secrets (keys create --models) the key is not read, so its variable need not be set.
    const catalog = parseConfig({ providers: [{ id: 'g', preset: 'groq' }] }, 'x.yaml', {}, { secrets: false });
    assert.equal(catalog.providers[0]!.api_key, undefined);
    assert.equal(catalog.providers[0]!.base_url, 'https://api.groq.com/openai/v1');
  });

  test('a wrong kind and an unknown preset are one report, each once with its path, beside the other problems', () => {
    const issues = issuesOf(() =>
      parseConfig(
        {
          providers: [
            { id: 'a', preset: 'grok', api_key: 'k' },
            { id: 'b', preset: 'groq', kind: 'anthropic', api_key: 'k' },
            { id: 'c', preset: 42, kind: 'openai', base_url: 'http://127.0.0.1:1/v1' },
            { id: 'd', preset: 'vllm', kind: 'nope' },
          ],
          models: [{ id: 'x/m', context_length: 10, endpoints: [{ provider: 'missing', upstream_model: 'm' }] }],
        },
        'x.yaml',
        {},
      ),
    );
    const known = 'openai, anthropic, gemini, openrouter, deepseek, xai, mistral, together, fireworks, cerebras, groq, ollama, vllm, lmstudio, llamacpp';
    assert.deepEqual(issues, [
      `providers[0].preset: unknown provider preset "grok" (known: ${known})`,
      'providers[1].kind: "anthropic" contradicts preset "groq", which is kind "openai" (leave kind out, or drop the preset)',
      `providers[2].preset: unknown provider preset 42 (known: ${known})`,
      'providers[3].kind: "nope" contradicts preset "vllm", which is kind "openai" (leave kind out, or drop the preset)',
      "providers[3].kind: Invalid enum value. Expected 'openai' | 'anthropic' | 'gemini' | 'local' | 'azure' | 'vertex' | 'bedrock', received 'nope'",
      'models[0].endpoints[0].provider: unknown provider "missing" (known: a, b, c, d)',
    ]);
  });

  test('KEY_HEADER says what each kind\'s adapter really sends the key as', () => {
    const sent = (p: ProviderConfig): Record<string, string> => {
      if (p.kind === 'anthropic') return anthropicHeaders(p);
      const target = { provider: p } as Parameters<typeof headersFor>[0];
      return p.kind === 'gemini' ? geminiHeaders(target, false) : headersFor(target);
    };
    for (const [preset, kind] of [['groq', 'openai'], ['anthropic', 'anthropic'], ['gemini', 'gemini']] as const) {
      const headers = sent(one({ preset, api_key: 'the-key' }));
      const [name, scheme] = KEY_HEADER[kind].split(': ');
      assert.equal(headers[name!.toLowerCase()], scheme ? `${scheme} the-key` : 'the-key', `${preset}: ${KEY_HEADER[kind]}`);
    }
  });
});

describe('provider presets: what config check shows', () => {
  const config = () =>
    parseConfig(
      {
        providers: [
          { id: 'up', kind: 'openai', base_url: 'http://127.0.0.1:9/v1' },
          { id: 'groq', preset: 'groq' },
          { id: 'gpu', preset: 'vllm', base_url: 'http://10.0.0.5:8000/v1' },
          { id: 'claude', preset: 'anthropic', api_key: 'sk-ant-very-secret' },
          { id: 'or', preset: 'openrouter', dialect: 'openai', api_key: '${OR_KEY:-}' },
        ],
      },
      'x.yaml',
      { GROQ_API_KEY: 'gsk-very-secret' },
    );

  test('one line per provider with a preset: the expansion, entry overrides marked, the key set or not, never its value', () => {
    assert.deepEqual(describePresetExpansions(config()), [
      'providers[1] "groq": preset groq (Groq) → kind openai, base_url https://api.groq.com/openai/v1, dialect groq, key set (sent as Authorization: Bearer)',
      'providers[2] "gpu": preset vllm (vLLM) → kind openai, base_url http://10.0.0.5:8000/v1 (the entry\'s; the preset\'s: http://127.0.0.1:8000/v1), dialect vllm, no key (the server needs none)',
      'providers[3] "claude": preset anthropic (Anthropic) → kind anthropic, base_url https://api.anthropic.com, key set (sent as x-api-key)',
      'providers[4] "or": preset openrouter (OpenRouter) → kind openai, base_url https://openrouter.ai/api/v1, dialect openai (the entry\'s; the preset\'s: openrouter), key not set (empty)',
    ]);
  });

  const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';
  test('opinference config check prints the expansion after the ok line, without the key', { skip }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'op-presets-'));
    try {
      const file = join(dir, 'presets.yaml');
      writeFileSync(
        file,
        ['providers:', '  - id: groq', '    preset: groq', '  - id: local', '    preset: ollama', 'models:', '  - id: openai/gpt-oss-120b', '    context_length: 131072', '    endpoints:', '      - provider: groq', '        upstream_model: openai/gpt-oss-120b', ''].join('\n'),
      );
      const { OP_CONFIG: _c, GROQ_API_KEY: _g, ...rest } = process.env;
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, 'config', 'check', '--config', file], { env: { ...rest, GROQ_API_KEY: 'gsk-must-not-be-printed' }, cwd: dir });
      assert.equal(stderr, '');
      assert.equal(
        stdout,
        [
          `${file}: ok — 2 providers, 1 models`,
          '  providers[0] "groq": preset groq (Groq) → kind openai, base_url https://api.groq.com/openai/v1, dialect groq, key set (sent as Authorization: Bearer)',
          '  providers[1] "local": preset ollama (Ollama) → kind openai, base_url http://127.0.0.1:11434/v1, dialect ollama, no key (the server needs none)',
          '',
        ].join('\n'),
      );
      assert.doesNotMatch(stdout, /gsk-must-not-be-printed/);
      // Unset, the one report names the variable and the preset.
      await assert.rejects(promisify(execFile)(process.execPath, [CLI, 'config', 'check', '--config', file], { env: rest, cwd: dir }), (e: { code?: number; stderr?: string }) => {
        assert.equal(e.code, 1);
        assert.match(e.stderr ?? '', /providers\[0\]\.api_key: environment variable GROQ_API_KEY is not set \(preset "groq" reads the key from it/);
        return true;
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('provider presets: a gateway with preset vllm', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    gw = await startGateway({
      providers: [{ id: 'gpu', preset: 'vllm', base_url: upstream.url }],
      models: [{ id: 'test/vllm', context_length: 8192, endpoints: [{ provider: 'gpu', upstream_model: 'served-model', supported_parameters: ['max_tokens', 'max_completion_tokens'] }] }],
    });
  });
  after(async () => {
    await gw.close();
    await upstream.close();
  });

  test('answers a chat request through the vLLM dialect (max_tokens), with no key sent', async () => {
    upstream.enqueue({ json: { id: 'x', object: 'chat.completion', created: 1, model: 'served-model', choices: [{ index: 0, message: { role: 'assistant', content: 'hello from vllm' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } } });
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
    const res = await client.chat.completions.create({ model: 'test/vllm', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 20 });
    assert.equal(res.choices[0]!.message.content, 'hello from vllm');
    assert.equal(res.choices[0]!.finish_reason, 'stop');
    const sent = upstream.requests.at(-1)!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, undefined);
    const body = sent.json as Record<string, unknown>;
    assert.equal(body.model, 'served-model');
    assert.equal(body.max_tokens, 20);
    assert.equal('max_completion_tokens' in body, false);
  });
});
