/**
 * The README's quickstart as a new user follows it: the config it copies (and the minimal one
 * it shows), then its first curl and SDK call, against a scripted upstream. The README's code
 * blocks are parsed here, so a model renamed in one place and not the other fails this test.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = new URL('../..', import.meta.url);
const README = readFileSync(new URL('README.md', ROOT), 'utf8');

/** The fenced code blocks of the README's `## Quickstart` section: language and text. */
function quickstartBlocks(): { lang: string; text: string }[] {
  const start = README.indexOf('\n## Quickstart\n');
  assert.ok(start >= 0, 'README has no "## Quickstart" section');
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
}

interface Curl {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** A `curl URL -H '…' -d '…'` command (backslash-continued lines, single or double quotes). */
function parseCurl(command: string): Curl {
  const line = command.replace(/\\\n\s*/g, ' ');
  const words = [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
  assert.equal(words[0], 'curl');
  const out: Curl = { url: '', headers: {}, body: '' };
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    if (w === '-H') {
      const [name, ...value] = words[++i]!.split(':');
      out.headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (w === '-d') out.body = words[++i]!;
    else if (!w.startsWith('-')) out.url = w;
  }
  return out;
}

const chunk = (delta: Json, extra: Json = {}) => JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...extra });

describe('README quickstart', () => {
  const blocks = quickstartBlocks();
  const sh = blocks.filter((b) => b.lang === 'sh').map((b) => b.text);
  const copied = /^cp (examples\/\S+\.yaml) opinference\.yaml$/m.exec(sh.join('\n'))?.[1];
  const minimal = blocks.find((b) => b.lang === 'yaml')?.text;
  const curlBlock = sh.find((t) => t.startsWith('curl ') && t.includes('/v1/chat/completions'));
  const sdkBlock = blocks.find((b) => b.lang === 'js')?.text;
  let upstream: Upstream;
  const OPENAI_KEY = 'sk-readme-openai-key';
  const savedKey = process.env.OPENAI_API_KEY;

  before(async () => {
    upstream = await startUpstream();
    process.env.OPENAI_API_KEY = OPENAI_KEY; // step 1: export OPENAI_API_KEY=…
  });
  after(async () => {
    await upstream?.close();
    if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = savedKey;
  });

  test('the section has the blocks this test reads', () => {
    assert.equal(copied, 'examples/opinference.yaml');
    assert.ok(minimal, 'no yaml block');
    assert.ok(curlBlock, 'no curl to /v1/chat/completions');
    assert.ok(sdkBlock, 'no js block');
    // Step 2 puts the key where the curl reads it.
    assert.match(sh.join('\n'), /^export OP_API_KEY=\$\(npx opinference keys create --name [\w-]+\)/m);
  });

  /**
   * Serve `raw` with every provider's `base_url` pointed at the scripted upstream, send the
   * README's curl (its URL, headers and body as written, the key and port filled in).
   */
  async function runCurl(raw: Json, label: string): Promise<void> {
    const curl = parseCurl(curlBlock!);
    const body = JSON.parse(curl.body) as Json;
    const models = (raw.models as Json[]).map((m) => m.id as string);
    const model = (raw.models as Json[]).find((m) => m.id === body.model || (m.aliases ?? []).includes(body.model));
    assert.ok(model, `${label}: the README's curl names ${body.model}, the config serves ${models.join(', ')}`);
    for (const p of raw.providers as Json[]) if (p.kind === 'openai') p.base_url = upstream.url;
    let gw: TestGateway | undefined;
    try {
      gw = await startGateway(raw);
      const key = await gw.createKey('my-app');
      upstream.enqueue({ sse: [chunk({ role: 'assistant', content: 'A gateway ' }), chunk({ content: 'routes requests.' }), chunk({}, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } })] });
      const url = curl.url.replace(/^http:\/\/localhost:8080/, gw.origin);
      assert.notEqual(url, curl.url, `${label}: the curl does not call http://localhost:8080 (the port npm start serves)`);
      const headers = Object.fromEntries(Object.entries(curl.headers).map(([k, v]) => [k, v.replace('$OP_API_KEY', key.secret)]));
      const res = await fetch(url, { method: 'POST', headers, body: curl.body });
      const text = await res.text();
      assert.equal(res.status, 200, `${label}: ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
      const content = text
        .split('\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => (JSON.parse(l.slice(6)) as Json).choices?.[0]?.delta?.content ?? '')
        .join('');
      assert.equal(content, 'A gateway routes requests.');
      const sent = upstream.requests.at(-1)!;
      assert.equal((sent.json as Json).model, model.endpoints[0].upstream_model);
      assert.equal(sent.headers.authorization, `Bearer ${OPENAI_KEY}`);
      await gw.flush();
      const records = await gw.store.db.selectFrom('generations').select(['served_model', 'status']).execute();
      assert.deepEqual(records, [{ served_model: model.id, status: 'success' }]);
    } finally {
      await gw?.close();
    }
  }

  test('the config the quickstart copies serves the model of its first curl', async () => {
    await runCurl(parseYaml(readFileSync(new URL(copied!, ROOT), 'utf8')) as Json, copied!);
  });

  test('the minimal config it shows serves the same model', async () => {
    await runCurl(parseYaml(minimal!) as Json, 'the README\'s yaml block');
  });

  test('the SDK example names the curl\'s model', () => {
    const curlModel = (JSON.parse(parseCurl(curlBlock!).body) as Json).model;
    assert.equal(/model: '([^']+)'/.exec(sdkBlock!)?.[1], curlModel);
  });
});
