/**
 * What a new operator found (issue 9 §5): `--version`; every command that uses the database
 * says which; `config check` reports every problem of a file in one run, control characters in
 * keys and headers included; `keys create --models` is checked against the catalog; a name
 * shared by several keys is refused by `keys disable` / `keys delete` instead of acting on all.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI } from '../helpers/cli-process.js';

const run = promisify(execFile);
const skip = existsSync(CLI) ? false : 'dist/src/cli.js is missing: run npm run build';
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe('opinference CLI for operators', { skip }, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const cli = async (...args: string[]): Promise<Ran> => {
    try {
      const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env, cwd: dir });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'op-cli-ops-'));
    writeFileSync(
      join(dir, 'gw.yaml'),
      ['providers:', '  - id: up', '    kind: openai', '    base_url: http://127.0.0.1:9', 'models:', '  - id: test/model', '    context_length: 8192', '    endpoints:', '      - provider: up', '        upstream_model: m', ''].join('\n'),
    );
    const { OP_CONFIG: _c, OP_DATABASE_URL: _d, OP_ADMIN_KEY: _a, ...rest } = process.env;
    env = { ...rest, OP_CONFIG: join(dir, 'gw.yaml'), OP_DATABASE_URL: `sqlite:${join(dir, 'keys.db')}` };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('--version and version print the package version', async () => {
    for (const args of [['--version'], ['-v'], ['version']]) {
      const r = await cli(...args);
      assert.equal(r.code, 0);
      assert.equal(r.stdout, `opinference ${VERSION}\n`);
    }
  });

  test('commands that use the database say which one, on stderr (stdout keeps the secret alone)', async () => {
    const created = await cli('keys', 'create', '--name', 'first');
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stderr, new RegExp(`^database: ${join(dir, 'keys.db').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(OP_DATABASE_URL\\)\\ncreated key key_\\w+ \\(first\\); its secret is on stdout, shown once: store it now\\n$`));
    // `K=$(opinference keys create --name x)` captures the secret and nothing else.
    assert.match(created.stdout, /^op-[\w-]{43}\n$/);
    const migrated = await cli('migrate');
    assert.equal(migrated.stderr, `database: ${join(dir, 'keys.db')} (OP_DATABASE_URL)\n`);
    const listed = await cli('keys', 'list');
    assert.match(listed.stderr, /^database: .*keys\.db \(OP_DATABASE_URL\)\n$/);
    const { OP_DATABASE_URL: _d, ...noUrl } = env;
    const defaulted = await run(process.execPath, [CLI, 'migrate'], { env: noUrl, cwd: dir });
    assert.equal(defaulted.stderr, `database: ${join(dir, 'data', 'opinference.db')} (default; set OP_DATABASE_URL to change)\n`);
  });

  test('keys create --models: ids are checked against the catalog', async () => {
    const bad = await cli('keys', 'create', '--name', 'typo', '--models', 'test/model,test/modle');
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr.split('\n').at(-2), `opinference: --models: no model "test/modle" in the catalog of ${join(dir, 'gw.yaml')} (known: test/model)`);
    assert.doesNotMatch((await cli('keys', 'list')).stdout, /typo/);
    const ok = await cli('keys', 'create', '--name', 'scoped', '--models', 'test/model');
    assert.equal(ok.code, 0, ok.stderr);
  });

  test('keys create --models reads the catalog only: the providers\' secrets need not be set', async () => {
    writeFileSync(
      join(dir, 'secrets.yaml'),
      [
        'providers:',
        '  - id: groq',
        '    kind: openai',
        '    base_url: https://api.groq.com/openai/v1',
        '    api_key: ${OP_TEST_UNSET_GROQ_KEY}',
        '    headers: { Authorization: "Bearer ${OP_TEST_UNSET_TOKEN}" }',
        'models:',
        '  - id: openai/gpt-oss-120b',
        '    context_length: 131072',
        '    endpoints:',
        '      - provider: groq',
        '        upstream_model: openai/gpt-oss-120b',
        '',
      ].join('\n'),
    );
    const created = await cli('keys', 'create', '--name', 'no-secrets', '--models', 'openai/gpt-oss-120b', '--config', join(dir, 'secrets.yaml'));
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /^op-[\w-]{43}\n$/);
    assert.doesNotMatch(created.stderr, /OP_TEST_UNSET/);
    // A typo is still caught against that catalog.
    const typo = await cli('keys', 'create', '--name', 'typo2', '--models', 'openai/gpt-oss-12b', '--config', join(dir, 'secrets.yaml'));
    assert.equal(typo.code, 1);
    assert.equal(typo.stderr.split('\n').at(-2), `opinference: --models: no model "openai/gpt-oss-12b" in the catalog of ${join(dir, 'secrets.yaml')} (known: openai/gpt-oss-120b)`);
    // serve and config check still need them.
    const check = await cli('config', 'check', '--config', join(dir, 'secrets.yaml'));
    assert.equal(check.code, 1);
    assert.match(check.stderr, /providers\[0\]\.api_key: environment variable OP_TEST_UNSET_GROQ_KEY is not set/);
  });

  test('config check warns when ${VAR:-} leaves a provider\'s key empty, naming the provider and the variable', async () => {
    writeFileSync(
      join(dir, 'empty-key.yaml'),
      [
        'providers:',
        '  - id: openai',
        '    kind: openai',
        '    base_url: https://api.openai.com/v1',
        '    api_key: ${OP_TEST_UNSET_OPENAI_KEY:-}',
        '  - id: set',
        '    kind: openai',
        '    base_url: https://example.test/v1',
        '    api_key: ${OP_TEST_SET_KEY:-}',
        'models:',
        '  - id: openai/gpt-4.1-nano',
        '    context_length: 1047576',
        '    endpoints:',
        '      - provider: openai',
        '        upstream_model: gpt-4.1-nano',
        '',
      ].join('\n'),
    );
    const saved = env;
    env = { ...env, OP_TEST_SET_KEY: 'sk-set' };
    try {
      const r = await cli('config', 'check', '--config', join(dir, 'empty-key.yaml'));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `${join(dir, 'empty-key.yaml')}: ok — 2 providers, 1 models (1 warning on stderr)\n`);
      assert.equal(
        r.stderr,
        'warning: providers[0].api_key: provider "openai" has an empty api_key: OP_TEST_UNSET_OPENAI_KEY is not set (the default after ":-" is empty), so its requests go out without a key; set OP_TEST_UNSET_OPENAI_KEY, or remove the provider\n',
      );
      // Set, no warning.
      env = { ...env, OP_TEST_UNSET_OPENAI_KEY: 'sk-now-set' };
      const ok = await cli('config', 'check', '--config', join(dir, 'empty-key.yaml'));
      assert.equal(ok.stderr, '');
      assert.equal(ok.stdout, `${join(dir, 'empty-key.yaml')}: ok — 2 providers, 1 models\n`);
    } finally {
      env = saved;
    }
  });

  test('keys create --models with no model in it ("", " ", ",") is refused, not an unrestricted key', async () => {
    for (const flag of ['', ' ', ',', ' , ']) {
      const r = await cli('keys', 'create', '--name', 'failopen', '--models', flag);
      assert.equal(r.code, 1, `--models ${JSON.stringify(flag)}: ${r.stdout}`);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr.split('\n').at(-2), `opinference: --models ${JSON.stringify(flag)} names no model; give model ids (--models a/b,c/d), or leave --models out to allow every model`);
    }
    assert.doesNotMatch((await cli('keys', 'list')).stdout, /failopen/);
  });

  test('keys disable / delete: a name shared by several keys is refused; an id or a unique name works', async () => {
    const a = await cli('keys', 'create', '--name', 'dup');
    const b = await cli('keys', 'create', '--name', 'dup');
    const idOf = (r: Ran) => /created key (key_\w+)/.exec(r.stderr)![1]!;
    const [idA, idB] = [idOf(a), idOf(b)];
    for (const verb of ['disable', 'delete']) {
      const refused = await cli('keys', verb, 'dup');
      assert.equal(refused.code, 1, verb);
      assert.match(refused.stderr, new RegExp(`opinference: 2 keys are named "dup" \\((${idA}, ${idB}|${idB}, ${idA})\\); use the id of the one you mean\\n$`), verb);
    }
    assert.doesNotMatch((await cli('keys', 'list')).stdout, /\tdisabled\t/);
    const disabled = await cli('keys', 'disable', idA);
    assert.equal(disabled.stdout, 'disabled 1 key(s)\n');
    const deleted = await cli('keys', 'delete', idB);
    assert.equal(deleted.stdout, `deleted key ${idB} (dup)\n`);
    // Now one key is named "dup": the name works.
    assert.equal((await cli('keys', 'delete', 'dup')).stdout, `deleted key ${idA} (dup)\n`);
    assert.equal((await cli('keys', 'delete', 'dup')).code, 1);
  });

  test('config check reports every problem of a file in one run, control characters included', async () => {
    writeFileSync(
      join(dir, 'many.yaml'),
      [
        'server:',
        '  body_limt_bytes: 5',
        'providers:',
        '  - id: up',
        '    kind: openai',
        '    api_key: "sk-abc\\r\\nX-Injected: 1"',
        '    headers:',
        '      "X-Ok": "fine"',
        '      "Bad Header": "x"',
        '      "X-Trace": "a\\nb"',
        '  - id: env',
        '    kind: anthropic',
        '    api_key: ${OP_TEST_UNSET_VARIABLE}',
        'models:',
        '  - id: test/model',
        '    context_length: "big"',
        '    endpoints:',
        '      - provider: nowhere',
        '        upstream_model: m',
        '',
      ].join('\n'),
    );
    const r = await cli('config', 'check', '--config', join(dir, 'many.yaml'));
    assert.equal(r.code, 1);
    const issues = r.stderr.split('\n').filter((l) => l.startsWith('  - ')).map((l) => l.slice(4)).sort();
    const control = 'must not contain control characters (CR, LF, tab …); a value read from a file may carry a trailing newline';
    assert.deepEqual(issues, [
      'models[0].context_length: Expected number, received string',
      'models[0].endpoints[0].provider: unknown provider "nowhere" (known: up, env)',
      `providers[0].api_key: ${control}`,
      'providers[0].base_url: required for kind "openai"',
      "providers[0].headers.Bad Header: must be a header name: letters, digits and !#$%&'*+.^_`|~-",
      `providers[0].headers.X-Trace: ${control}`,
      'providers[1].api_key: environment variable OP_TEST_UNSET_VARIABLE is not set',
      'server.body_limt_bytes: unknown key',
    ]);
    assert.doesNotMatch(r.stderr, /sk-abc/);
  });
});
