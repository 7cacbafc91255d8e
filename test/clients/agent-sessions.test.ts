/**
 * Agent clients' sessions as the generation's session (`op.session`): Claude Code's
 * `x-claude-code-session-id` header (else the session inside `metadata.user_id`) on
 * `POST /v1/messages`, Codex's `session-id` (older: `session_id`) header on `POST /v1/responses`. Sent with the
 * official SDKs to a gateway on port 0 in front of scripted `anthropic` and `openai` upstreams;
 * read back through `GET /v1/generation` and `GET /v1/usage?group_by=session`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const SESSION = '6f1c2b9e-0d47-4e51-9a3c-7b2d8e4f1a60';

const message = (text: string) => ({
  json: { id: 'msg_s1', type: 'message', role: 'assistant', model: 'claude-up', content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 4 } },
});
const completion = (text: string) => ({
  json: { id: 'c1', object: 'chat.completion', created: 1, model: 'up', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } },
});

describe('agent client sessions → op.session', () => {
  let anth: Upstream;
  let oai: Upstream;
  let gw: TestGateway;
  let key: { secret: string; id: string };
  let claude: Anthropic;
  let codex: OpenAI;

  before(async () => {
    anth = await startUpstream();
    oai = await startUpstream();
    gw = await startGateway({
      retention: 1,
      providers: [
        { id: 'anth', kind: 'anthropic', base_url: anth.url, api_key: 'sk-ant-up' },
        { id: 'oai', kind: 'openai', base_url: oai.url, api_key: 'sk-oai-up' },
      ],
      models: [
        { id: 'anthropic/claude-test', context_length: 200000, aliases: ['claude-test'], endpoints: [{ provider: 'anth', upstream_model: 'claude-up', pricing: { prompt: 3, completion: 15 } }] },
        { id: 'test/coder', context_length: 8192, endpoints: [{ provider: 'oai', upstream_model: 'up', pricing: { prompt: 1, completion: 2 } }] },
      ],
    });
    key = await gw.createKey('agents');
    claude = new Anthropic({ baseURL: gw.origin, apiKey: key.secret, maxRetries: 0 });
    codex = new OpenAI({ baseURL: gw.baseURL, apiKey: key.secret, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await anth?.close();
    await oai?.close();
  });

  /** The generation record as `GET /v1/generation?id=…` shows it. */
  const generation = async (id: string | null): Promise<Json> => {
    assert.ok(id, 'x-op-generation-id header');
    await gw.flush();
    const res = await fetch(`${gw.baseURL}/generation?id=${id}`, { headers: { authorization: `Bearer ${key.secret}` } });
    assert.equal(res.status, 200);
    return ((await res.json()) as Json).data;
  };

  const ask = (headers: Record<string, string>, body: Json = {}) =>
    claude.messages.create({ model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }], ...body } as Anthropic.MessageCreateParamsNonStreaming, { headers }).withResponse();

  test("Claude Code's x-claude-code-session-id header is the generation's session; usage groups by it", async () => {
    anth.enqueue(message('One.'), message('Two.'));
    const first = await ask({ 'x-claude-code-session-id': SESSION });
    assert.equal(first.data.content[0]!.type === 'text' && first.data.content[0]!.text, 'One.');
    const second = await claude.messages
      .stream({ model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'Again' }] }, { headers: { 'x-claude-code-session-id': SESSION } })
      .withResponse();
    await second.data.finalMessage();

    const g1 = await generation(first.response.headers.get('x-op-generation-id'));
    assert.equal(g1.session_id, SESSION);
    assert.equal(g1.api_type, 'messages');
    const g2 = await generation(second.response.headers.get('x-op-generation-id'));
    assert.equal(g2.session_id, SESSION);
    // The header is the gateway's to read: the upstream never sees it.
    assert.equal(anth.requests.at(-1)!.headers['x-claude-code-session-id'], undefined);

    const res = await fetch(`${gw.baseURL}/usage?bucket=day&group_by=session`, { headers: { authorization: `Bearer ${key.secret}` } });
    assert.equal(res.status, 200);
    const usage = (await res.json()) as Json;
    const row = (usage.data as Json[]).find((r) => r.group === SESSION);
    assert.equal(row?.requests, 2);
    assert.equal(row?.prompt_tokens, 24);
  });

  test('an explicit op.session wins over the header', async () => {
    anth.enqueue(message('Mine.'));
    const res = await ask({ 'x-claude-code-session-id': SESSION }, { op: { session: 'chosen-by-body' } });
    assert.equal((await generation(res.response.headers.get('x-op-generation-id'))).session_id, 'chosen-by-body');
    assert.equal((anth.requests.at(-1)!.json as Json).op, undefined);
  });

  test("without the header, the session inside Claude Code's metadata.user_id (both forms); a plain user id is none", async () => {
    anth.enqueue(message('Legacy.'), message('Json.'), message('Plain.'));
    const legacy = await ask({}, { metadata: { user_id: `user_${'ab12'.repeat(16)}_account__session_${SESSION}` } });
    assert.equal((await generation(legacy.response.headers.get('x-op-generation-id'))).session_id, SESSION);
    const json = await ask({}, { metadata: { user_id: JSON.stringify({ device_id: 'cd34'.repeat(16), account_uuid: '', session_id: 'json-form-session' }) } });
    assert.equal((await generation(json.response.headers.get('x-op-generation-id'))).session_id, 'json-form-session');
    const plain = await ask({}, { metadata: { user_id: 'user-42' } });
    assert.equal((await generation(plain.response.headers.get('x-op-generation-id'))).session_id, null);
    // metadata goes upstream as sent.
    assert.deepEqual((anth.requests.at(-1)!.json as Json).metadata, { user_id: 'user-42' });
  });

  test("an over-long or empty session header is a 400 naming the header, as op.session's rule; recorded, never sent upstream", async () => {
    const before = anth.requests.length;
    for (const [value, got] of [['s'.repeat(257), 257], ['', 0]] as const) {
      const res = await fetch(`${gw.origin}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key.secret, 'anthropic-version': '2023-06-01', 'x-claude-code-session-id': value },
        body: JSON.stringify({ model: 'claude-test', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      assert.equal(res.status, 400);
      const body = (await res.json()) as Json;
      assert.equal(body.type, 'error');
      assert.equal(body.error.type, 'invalid_request_error');
      assert.equal(body.error.code, 'invalid_request');
      assert.equal(body.error.param, 'x-claude-code-session-id');
      assert.equal(body.error.message, `x-claude-code-session-id: a session id must be 1 to 256 characters, got ${got}`);
      const g = await generation(res.headers.get('x-op-generation-id'));
      assert.deepEqual([g.status, g.error_code, g.http_status], ['error', 'invalid_request', 400]);
    }
    // Same rule for a body field: an over-long session in metadata.user_id.
    const long = JSON.stringify({ device_id: 'x', session_id: 'j'.repeat(300) });
    await assert.rejects(ask({}, { metadata: { user_id: long } }), (err: InstanceType<typeof Anthropic.APIError>) => {
      assert.equal(err.status, 400);
      assert.equal((err.error as Json).error.param, 'metadata.user_id');
      return true;
    });
    // An over-long op.session itself is refused the same way (by the schema).
    await assert.rejects(ask({ 'x-claude-code-session-id': SESSION }, { op: { session: 'o'.repeat(257) } }), (err: InstanceType<typeof Anthropic.APIError>) => {
      assert.equal(err.status, 400);
      assert.equal((err.error as Json).error.param, 'op.session');
      return true;
    });
    assert.equal(anth.requests.length, before);
  });

  test('a session header in UTF-8 is read as UTF-8; one sent twice or invalid UTF-8 is a 400 naming it', async () => {
    /** POST /v1/messages over a raw socket, with these header lines as raw bytes. */
    const raw = async (headerLines: Buffer[]): Promise<{ status: number; headers: string; body: Json }> => {
      const body = JSON.stringify({ model: 'claude-test', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] });
      const head = Buffer.concat([
        Buffer.from(`POST /v1/messages HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\nx-api-key: ${key.secret}\r\nanthropic-version: 2023-06-01\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`),
        ...headerLines.map((l) => Buffer.concat([l, Buffer.from('\r\n')])),
        Buffer.from('\r\n'),
      ]);
      const { connect } = await import('node:net');
      const url = new URL(gw.origin);
      const text = await new Promise<string>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const socket = connect(Number(url.port), url.hostname, () => socket.write(Buffer.concat([head, Buffer.from(body)])));
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('error', reject);
      });
      const [top, rest] = [text.slice(0, text.indexOf('\r\n\r\n')), text.slice(text.indexOf('\r\n\r\n') + 4)];
      const json = rest.includes('{') ? (JSON.parse(rest.slice(rest.indexOf('{'), rest.lastIndexOf('}') + 1)) as Json) : {};
      return { status: Number(top.split(' ')[1]), headers: top, body: json };
    };
    anth.enqueue(message('Unicode.'));
    const utf8 = await raw([Buffer.concat([Buffer.from('x-claude-code-session-id: '), Buffer.from('sessão-会话', 'utf8')])]);
    assert.equal(utf8.status, 200, JSON.stringify(utf8.body));
    const id = /x-op-generation-id: (\S+)/i.exec(utf8.headers)![1]!;
    assert.equal((await generation(id)).session_id, 'sessão-会话');

    const before = anth.requests.length;
    const twice = await raw([Buffer.from('x-claude-code-session-id: aaa'), Buffer.from('x-claude-code-session-id: bbb')]);
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error.param, 'x-claude-code-session-id');
    assert.equal(twice.body.error.message, 'x-claude-code-session-id: the header is sent more than once; send one session id');
    const invalid = await raw([Buffer.concat([Buffer.from('x-claude-code-session-id: bad'), Buffer.from([0xff, 0xfe])])]);
    assert.equal(invalid.status, 400);
    assert.equal(invalid.body.error.message, 'x-claude-code-session-id: a session id must be valid UTF-8');
    assert.equal(anth.requests.length, before);
  });

  test("Codex's session-id header (older: session_id) on /v1/responses is the session; op.session still wins; over-long is a 400", async () => {
    oai.enqueue(completion('Codex one.'), completion('Codex old.'), completion('Codex two.'));
    const one = await codex.responses.create({ model: 'test/coder', input: 'Hi' }, { headers: { 'session-id': 'codex-thread-1', 'thread-id': 'codex-thread-1' } }).withResponse();
    assert.equal(one.data.output_text, 'Codex one.');
    assert.equal((await generation(one.response.headers.get('x-op-generation-id'))).session_id, 'codex-thread-1');
    const old = await codex.responses.create({ model: 'test/coder', input: 'Hi' }, { headers: { session_id: 'codex-thread-0' } }).withResponse();
    assert.equal((await generation(old.response.headers.get('x-op-generation-id'))).session_id, 'codex-thread-0');
    const two = await codex.responses.create({ model: 'test/coder', input: 'Hi', op: { session: 'explicit' } } as OpenAI.Responses.ResponseCreateParamsNonStreaming, { headers: { 'session-id': 'codex-thread-1' } }).withResponse();
    assert.equal((await generation(two.response.headers.get('x-op-generation-id'))).session_id, 'explicit');
    await assert.rejects(codex.responses.create({ model: 'test/coder', input: 'Hi' }, { headers: { 'session-id': 'c'.repeat(300) } }), (err: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(err.status, 400);
      assert.equal(err.code, 'invalid_request');
      assert.equal(err.param, 'session-id');
      return true;
    });
    assert.equal(oai.requests.length, 3);
  });
});
