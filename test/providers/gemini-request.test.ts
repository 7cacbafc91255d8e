/**
 * Request translation of provider kind `gemini`: OpenAI chat requests sent through the gateway,
 * and the exact body (deepEqual), path and headers the Gemini upstream receives, one mapping
 * rule per test. Images come from a local image server on 127.0.0.1.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import OpenAI from 'openai';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const BIG = Buffer.concat([PNG, Buffer.alloc(5000, 1)]);
const PDF_B64 = Buffer.from('%PDF-1.4 test').toString('base64');

const ALL_PARAMS = [
  'temperature', 'top_p', 'top_k', 'max_tokens', 'max_completion_tokens', 'stop', 'seed', 'frequency_penalty', 'presence_penalty',
  'tools', 'tool_choice', 'response_format', 'reasoning', 'reasoning_effort',
];

const textResponse = (text = 'ok') => ({
  candidates: [{ content: { role: 'model', parts: [{ text }] }, finishReason: 'STOP', index: 0 }],
  usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1, totalTokenCount: 6 },
});

function endpoint(provider: string, upstreamModel: string, supported = ALL_PARAMS) {
  return { provider, upstream_model: upstreamModel, pricing: { prompt: 1, completion: 2 }, supported_parameters: supported };
}

function config(upstreamUrl: string) {
  const origin = new URL(upstreamUrl).origin;
  return {
    providers: [
      { id: 'gemini', kind: 'gemini', base_url: origin, api_key: 'k' },
      { id: 'gemini-open', kind: 'gemini', base_url: `${origin}/`, api_key: 'k2', image_fetch: { allow_private_addresses: true, max_bytes: 1000, timeout_ms: 5000 } },
      { id: 'gemini-v1', kind: 'gemini', base_url: upstreamUrl, api_key: 'k3', headers: { 'X-Extra': 'yes' } },
      { id: 'gemini-hasty', kind: 'gemini', base_url: origin, api_key: 'k4', image_fetch: { allow_private_addresses: true, timeout_ms: 200 } },
    ],
    models: [
      { id: 'google/gemini-x', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini', 'gemini-x')] },
      { id: 'google/gemini-open', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini-open', 'gemini-x')] },
      { id: 'google/gemini-v1', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini-v1', 'gemini-x')] },
      { id: 'google/gemini-hasty', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini-hasty', 'gemini-x')] },
      { id: 'google/gemini-2.5-flash', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini', 'gemini-2.5-flash')] },
      { id: 'google/gemini-2.5-pro', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini', 'gemini-2.5-pro')] },
      { id: 'google/gemini-3-pro', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini', 'gemini-3-pro-preview')] },
      { id: 'google/gemini-min', context_length: 1_000_000, architecture: { input_modalities: ['text', 'image', 'file', 'audio'] }, endpoints: [endpoint('gemini', 'gemini-x', ['max_tokens', 'tools'])] },
    ],
  };
}

describe('Gemini request translation', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  let client: OpenAI;
  let images: http.Server;
  let imageBase: string;
  let imageHits = 0;

  before(async () => {
    images = http.createServer((req, res) => {
      imageHits++;
      switch (req.url) {
        case '/cat.png':
          res.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
          return res.end(PNG);
        case '/untyped':
          res.writeHead(200, { 'content-type': 'application/octet-stream' });
          return res.end(PNG);
        case '/big.png':
          res.writeHead(200, { 'content-type': 'image/png' });
          return res.end(BIG);
        case '/redirect':
          res.writeHead(302, { location: '/cat.png' });
          return res.end();
        case '/loop':
          res.writeHead(302, { location: '/loop' });
          return res.end();
        case '/slow':
          setTimeout(() => {
            res.writeHead(200, { 'content-type': 'image/png' });
            res.end(PNG);
          }, 1000);
          return;
        case '/page':
          res.writeHead(200, { 'content-type': 'text/html' });
          return res.end('<html></html>');
        default:
          res.writeHead(404);
          return res.end();
      }
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
    upstream = await startUpstream();
    upstream.setDefault({ json: textResponse() });
    gw = await startGateway(config(upstream.url));
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: gw.adminKey, maxRetries: 0 });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
    await new Promise((resolve) => images?.close(resolve));
  });

  /** Send a chat request; return the body the upstream received. */
  async function sent(body: Json): Promise<Json> {
    const before = upstream.requests.length;
    await client.chat.completions.create({ model: 'google/gemini-x', ...body } as never);
    assert.equal(upstream.requests.length, before + 1);
    return upstream.requests.at(-1)!.json as Json;
  }

  /** Send a request the gateway must refuse; return the status and error object, and check nothing went upstream. */
  async function refused(body: Json): Promise<{ status: number; error: Json }> {
    const before = upstream.requests.length;
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'google/gemini-x', ...body }),
    });
    assert.equal(upstream.requests.length, before, 'nothing may reach the upstream');
    return { status: res.status, error: ((await res.json()) as Json).error };
  }

  async function lastRecordDetail(): Promise<Json> {
    await gw.flush();
    // The row inserted last: SQLite's rowid, PostgreSQL's physical position (this table only grows).
    const row = await gw.store.db.selectFrom('generations').select('detail').orderBy(gw.store.dialect === 'postgres' ? sql`ctid` : sql`rowid`, 'desc').executeTakeFirstOrThrow();
    return JSON.parse(row.detail) as Json;
  }

  test('URL, headers and a plain text body', async () => {
    await sent({ messages: [{ role: 'user', content: 'Hello' }] });
    const req = upstream.requests.at(-1)!;
    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/v1beta/models/gemini-x:generateContent');
    assert.equal(req.headers['x-goog-api-key'], 'k');
    assert.equal(req.headers['content-type'], 'application/json');
    assert.deepEqual(req.json, { contents: [{ role: 'user', parts: [{ text: 'Hello' }] }] });
  });

  test('a base_url ending in a version segment gets no second version; provider headers are sent', async () => {
    await client.chat.completions.create({ model: 'google/gemini-v1', messages: [{ role: 'user', content: 'Hello' }] });
    const req = upstream.requests.at(-1)!;
    assert.equal(req.path, '/v1/models/gemini-x:generateContent');
    assert.equal(req.headers['x-goog-api-key'], 'k3');
    assert.equal(req.headers['x-extra'], 'yes');
    upstream.enqueue({ sse: [JSON.stringify(textResponse('hi'))], framing: 'gemini' });
    const stream = await client.chat.completions.create({ model: 'google/gemini-open', messages: [{ role: 'user', content: 'Hello' }], stream: true });
    for await (const _ of stream) void _;
    assert.equal(upstream.requests.at(-1)!.path, '/v1beta/models/gemini-x:streamGenerateContent?alt=sse');
  });

  test('system and developer messages anywhere → systemInstruction in order; same-role turns merged', async () => {
    const body = await sent({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'user', content: [{ type: 'text', text: 'there' }, { type: 'text', text: '' }] },
        { role: 'assistant', content: 'Hello!' },
        { role: 'assistant', content: [{ type: 'text', text: 'How can I help?' }] },
        { role: 'developer', content: [{ type: 'text', text: 'Use metric units.' }] },
        { role: 'user', content: 'Weather?' },
      ],
    });
    assert.deepEqual(body, {
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Use metric units.' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Hi' }, { text: 'there' }] },
        { role: 'model', parts: [{ text: 'Hello!' }, { text: 'How can I help?' }] },
        { role: 'user', parts: [{ text: 'Weather?' }] },
      ],
    });
  });

  test('tool calls with empty and null content, function responses grouped, names looked up, results wrapped', async () => {
    const body = await sent({
      messages: [
        { role: 'user', content: 'Weather and time in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_2', content: '"12:00"' },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":20,"unit":"C"}' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'get_news', arguments: ' {} ' } }] },
        { role: 'tool', tool_call_id: 'call_3', content: [{ type: 'text', text: 'no ' }, { type: 'text', text: 'news' }] },
        { role: 'user', content: 'Thanks' },
        { role: 'assistant', content: 'Anything else?', tool_calls: [{ id: 'call_4', type: 'function', function: { name: 'get_list', arguments: '{"n":2}' } }] },
        { role: 'tool', tool_call_id: 'call_4', content: '[1,2]' },
      ],
    });
    assert.deepEqual(body, {
      contents: [
        { role: 'user', parts: [{ text: 'Weather and time in Paris?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }, { functionCall: { name: 'get_time', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_time', response: { result: '12:00' } } }, { functionResponse: { name: 'get_weather', response: { temp: 20, unit: 'C' } } }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_news', args: {} } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_news', response: { result: 'no news' } } }] },
        // Human text after function responses stays its own content.
        { role: 'user', parts: [{ text: 'Thanks' }] },
        { role: 'model', parts: [{ text: 'Anything else?' }, { functionCall: { name: 'get_list', args: { n: 2 } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_list', response: { result: [1, 2] } } }] },
      ],
    });
  });

  test('invalid tool-call arguments and unknown tool_call_id are 400s naming the field', async () => {
    const bad = await refused({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ],
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.error.code, 'invalid_request');
    assert.equal(bad.error.param, 'messages[1].tool_calls[0].function.arguments');
    const notObject = await refused({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '[1]' } }] },
      ],
    });
    assert.equal(notObject.error.param, 'messages[1].tool_calls[0].function.arguments');
    const unknown = await refused({
      messages: [
        { role: 'user', content: 'x' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c9', content: 'r' },
      ],
    });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.error.param, 'messages[2].tool_call_id');
  });

  test('images: a data URL is sent inline; an http URL is fetched and inlined when private addresses are allowed', async () => {
    const body = await sent({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
          ],
        },
      ],
    });
    assert.deepEqual(body.contents, [{ role: 'user', parts: [{ text: 'What is this?' }, { inlineData: { mimeType: 'image/png', data: PNG.toString('base64') } }] }]);

    // By IP literal, through a redirect, sniffed (octet-stream), and by a host name resolved with dns.lookup.
    for (const url of [`${imageBase}/cat.png`, `${imageBase}/redirect`, `${imageBase}/untyped`, `${imageBase.replace('127.0.0.1', 'localhost')}/cat.png`]) {
      await client.chat.completions.create({
        model: 'google/gemini-open',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'And this?' }, { type: 'image_url', image_url: { url } }] }],
      });
      assert.deepEqual((upstream.requests.at(-1)!.json as Json).contents, [
        { role: 'user', parts: [{ text: 'And this?' }, { inlineData: { mimeType: 'image/png', data: PNG.toString('base64') } }] },
      ], url);
    }
  });

  test('images: loopback URLs are refused by default, with a 400 naming the part', async () => {
    const hits = imageHits;
    for (const url of [`${imageBase}/cat.png`, `${imageBase.replace('127.0.0.1', 'localhost')}/cat.png`, 'http://[::1]:9/cat.png', 'http://169.254.169.254/latest']) {
      const r = await refused({ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url } }] }] });
      assert.equal(r.status, 400, url);
      assert.equal(r.error.code, 'invalid_request');
      assert.equal(r.error.param, 'messages[0].content[1].image_url.url');
      // An IP literal is named with its class; a name that resolves to one is not (DNS answers stay private).
      const literal = !url.includes('localhost');
      if (literal) assert.match(r.error.message, /^messages\[0\]\.content\[1\]\.image_url\.url: could not fetch the image: .*(loopback|link-local) address/);
      else assert.equal(r.error.message, 'messages[0].content[1].image_url.url: could not fetch the image: the host cannot be reached or is not allowed (only public addresses are fetched)');
    }
    assert.equal(imageHits, hits, 'the image server was never contacted');
  });

  test('images: too large, not an image, too many redirects, an error status, too slow, not http are 400s', async () => {
    const cases: [string, RegExp][] = [
      [`${imageBase}/big.png`, /larger than 1000 bytes/],
      [`${imageBase}/page`, /not an image \(content-type text\/html\)/],
      [`${imageBase}/loop`, /more than 3 redirects/],
      [`${imageBase}/missing`, /HTTP 404/],
    ];
    for (const [url, reason] of cases) {
      const before = upstream.requests.length;
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'google/gemini-open', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url } }] }] }),
      });
      const error = ((await res.json()) as Json).error;
      assert.equal(res.status, 400, url);
      assert.equal(error.param, 'messages[0].content[0].image_url.url');
      assert.match(error.message, reason);
      assert.equal(upstream.requests.length, before);
    }
    const slow = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'google/gemini-hasty', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, { type: 'image_url', image_url: { url: `${imageBase}/slow` } }] }] }),
    });
    assert.equal(slow.status, 400);
    assert.deepEqual(((await slow.json()) as Json).error.message, 'messages[0].content[1].image_url.url: could not fetch the image: no complete answer within 200 ms');
    const ftp = await refused({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://example.com/a.png' } }] }] });
    assert.equal(ftp.error.param, 'messages[0].content[0].image_url.url');
  });

  test('PDFs (data URL or raw base64) and audio → inlineData', async () => {
    const body = await sent({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${PDF_B64}` } },
            { type: 'file', file: { filename: 'b.pdf', file_data: PDF_B64 } },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
            { type: 'text', text: 'Summarise.' },
          ],
        },
      ],
    });
    assert.deepEqual(body.contents, [
      {
        role: 'user',
        parts: [
          { inlineData: { mimeType: 'application/pdf', data: PDF_B64 } },
          { inlineData: { mimeType: 'application/pdf', data: PDF_B64 } },
          { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
          { text: 'Summarise.' },
        ],
      },
    ]);
    const fileId = await refused({ messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] });
    assert.equal(fileId.error.param, 'messages[0].content[0].file.file_id');
  });

  test('tools: declarations with cleaned schemas; tool_choice auto / none / required / named', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather of a city',
          strict: true,
          parameters: {
            $schema: 'http://json-schema.org/draft-07/schema#',
            type: 'object',
            additionalProperties: false,
            properties: {
              city: { type: 'string', minLength: 1, format: 'hostname' },
              unit: { anyOf: [{ $ref: '#/$defs/unit' }, { type: 'null' }] },
              days: { type: ['integer', 'null'], exclusiveMinimum: 0, format: 'int32' },
              when: { type: 'string', format: 'date-time' },
              tags: { type: 'array', items: { type: 'string', const: 'x' }, uniqueItems: true },
            },
            required: ['city', 'nope'],
            $defs: { unit: { type: 'string', enum: ['C', 'F'], description: 'Unit' } },
          },
        },
      },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
    ];
    const declarations = [
      {
        name: 'get_weather',
        description: 'Weather of a city',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string', minLength: 1 },
            unit: { type: 'string', enum: ['C', 'F'], description: 'Unit', nullable: true },
            days: { type: 'integer', nullable: true, format: 'int32' },
            when: { type: 'string', format: 'date-time' },
            tags: { type: 'array', items: { type: 'string', enum: ['x'] } },
          },
          required: ['city'],
        },
      },
      { name: 'get_time' },
    ];
    const messages = [{ role: 'user', content: 'Weather?' }];
    const cases: [unknown, Json | undefined][] = [
      [undefined, undefined],
      ['auto', { functionCallingConfig: { mode: 'AUTO' } }],
      ['none', { functionCallingConfig: { mode: 'NONE' } }],
      ['required', { functionCallingConfig: { mode: 'ANY' } }],
      [{ type: 'function', function: { name: 'get_time' } }, { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } }],
    ];
    for (const [tool_choice, toolConfig] of cases) {
      const body = await sent({ messages, tools, ...(tool_choice === undefined ? {} : { tool_choice }) });
      const expected: Json = { contents: [{ role: 'user', parts: [{ text: 'Weather?' }] }], tools: [{ functionDeclarations: declarations }] };
      if (toolConfig) expected.toolConfig = toolConfig;
      assert.deepEqual(body, expected, JSON.stringify(tool_choice));
    }
  });

  test('sampling parameters, stop and the output limit → generationConfig; unmappable and unsupported ones dropped', async () => {
    const body = await sent({
      messages: [{ role: 'user', content: 'Hi' }],
      temperature: 1.5,
      top_p: 0.9,
      top_k: 40,
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      max_tokens: 100,
      max_completion_tokens: 300,
      stop: ['END', 'STOP'],
      user: 'user-1',
      logit_bias: { '42': 1 },
    });
    assert.deepEqual(body.generationConfig, {
      temperature: 1.5, topP: 0.9, topK: 40, seed: 7, presencePenalty: 0.5, frequencyPenalty: -0.5, maxOutputTokens: 300, stopSequences: ['END', 'STOP'],
    });
    assert.deepEqual((await lastRecordDetail()).dropped_parameters, ['logit_bias', 'user']);

    const single = await sent({ messages: [{ role: 'user', content: 'Hi' }], stop: 'END' });
    assert.deepEqual(single.generationConfig, { stopSequences: ['END'] });

    await client.chat.completions.create({ model: 'google/gemini-min', messages: [{ role: 'user', content: 'Hi' }], temperature: 0.2, stop: 'X', max_tokens: 50, seed: 1 });
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).generationConfig, { maxOutputTokens: 50 });
    assert.deepEqual((await lastRecordDetail()).dropped_parameters, ['temperature', 'stop', 'seed']);
  });

  test('response_format json_schema → responseMimeType + responseJsonSchema; json_object → responseMimeType', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };
    const withSchema = await sent({ messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema } } });
    assert.deepEqual(withSchema.generationConfig, { responseMimeType: 'application/json', responseJsonSchema: schema });
    const object = await sent({ messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'json_object' } });
    assert.deepEqual(object.generationConfig, { responseMimeType: 'application/json' });
    const text = await sent({ messages: [{ role: 'user', content: 'Hi' }], response_format: { type: 'text' } });
    assert.equal(text.generationConfig, undefined);
  });

  test('reasoning → thinkingConfig: budget on 2.5, level on 3, includeThoughts unless excluded', async () => {
    const cases: [string, Json, Json | undefined, string[]][] = [
      ['google/gemini-2.5-flash', { reasoning_effort: 'high', max_tokens: 1000 }, { thinkingBudget: 999, includeThoughts: true }, []],
      ['google/gemini-2.5-flash', { reasoning_effort: 'high', max_tokens: 10000 }, { thinkingBudget: 8000, includeThoughts: true }, []],
      ['google/gemini-2.5-flash', { reasoning: { effort: 'low' } }, { thinkingBudget: 2048, includeThoughts: true }, []],
      ['google/gemini-2.5-flash', { reasoning: { effort: 'none' } }, { thinkingBudget: 0 }, []],
      ['google/gemini-2.5-flash', { reasoning: { max_tokens: 2048, exclude: true } }, { thinkingBudget: 2048 }, []],
      ['google/gemini-2.5-flash', { reasoning: { max_tokens: 50000 } }, { thinkingBudget: 24576, includeThoughts: true }, ['reasoning.max_tokens 50000 clamped to 24576, the largest thinking budget of gemini-2.5-flash']],
      ['google/gemini-2.5-flash', { reasoning: { enabled: true } }, { includeThoughts: true }, []],
      ['google/gemini-2.5-pro', { reasoning: { effort: 'none' } }, { thinkingBudget: 128 }, ['reasoning effort "none": gemini-2.5-pro cannot turn thinking off; sent thinkingBudget 128']],
      ['google/gemini-3-pro', { reasoning: { effort: 'low' } }, { thinkingLevel: 'LOW', includeThoughts: true }, []],
      ['google/gemini-3-pro', { reasoning_effort: 'xhigh' }, { thinkingLevel: 'HIGH', includeThoughts: true }, ['reasoning effort "xhigh" clamped to thinkingLevel HIGH, the highest Gemini level']],
      ['google/gemini-3-pro', { reasoning: { effort: 'medium', exclude: true } }, { thinkingLevel: 'MEDIUM' }, []],
      ['google/gemini-3-pro', {}, undefined, []],
    ];
    for (const [model, extra, thinking, warnings] of cases) {
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], ...extra } as never);
      const config = (upstream.requests.at(-1)!.json as Json).generationConfig as Json | undefined;
      assert.deepEqual(config?.thinkingConfig, thinking, `${model} ${JSON.stringify(extra)}`);
      assert.deepEqual((await lastRecordDetail()).warnings, warnings, `${model} ${JSON.stringify(extra)}`);
    }
  });

  test('thought signatures round-trip: turn 1 returns them as reasoning_details, turn 2 puts them back on the parts', async () => {
    upstream.enqueue({
      json: {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Checking both cities.', thoughtSignature: 'sig-text' },
                { functionCall: { name: 'weather', args: { location: 'SF' } }, thoughtSignature: 'sig-call-1' },
                { functionCall: { name: 'weather', args: { location: 'NY' } } },
              ],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 10, thoughtsTokenCount: 30, totalTokenCount: 60 },
      },
    });
    const tools = [{ type: 'function' as const, function: { name: 'weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } }];
    const user = { role: 'user' as const, content: 'Weather in SF and NY?' };
    const turn1 = await client.chat.completions.create({ model: 'google/gemini-3-pro', messages: [user], tools });
    const message = turn1.choices[0]!.message as unknown as Json;
    const [id1, id2] = (message.tool_calls as Json[]).map((t) => t.id as string);
    assert.deepEqual(message.reasoning_details, [
      { type: 'reasoning.encrypted', data: 'sig-text', format: 'google-gemini-v1' },
      { type: 'reasoning.encrypted', data: 'sig-call-1', id: id1, format: 'google-gemini-v1' },
    ]);
    assert.equal(turn1.choices[0]!.finish_reason, 'tool_calls');

    await client.chat.completions.create({
      model: 'google/gemini-3-pro',
      tools,
      messages: [
        user,
        { role: 'assistant', content: message.content, tool_calls: message.tool_calls, reasoning_details: message.reasoning_details } as never,
        { role: 'tool', tool_call_id: id2!, content: '{"temp":10}' },
        { role: 'tool', tool_call_id: id1!, content: '{"temp":18}' },
      ],
    });
    const body = upstream.requests.at(-1)!.json as Json;
    assert.deepEqual(body.contents, [
      { role: 'user', parts: [{ text: 'Weather in SF and NY?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking both cities.', thoughtSignature: 'sig-text' },
          { functionCall: { name: 'weather', args: { location: 'SF' } }, thoughtSignature: 'sig-call-1' },
          { functionCall: { name: 'weather', args: { location: 'NY' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'weather', response: { temp: 10 } } },
          { functionResponse: { name: 'weather', response: { temp: 18 } } },
        ],
      },
    ]);
    assert.deepEqual((await lastRecordDetail()).warnings, []);
  });

  test('streamed signatures arrive as delta.reasoning_details and round-trip too', async () => {
    upstream.enqueue({
      sse: [
        JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: 'Thinking about it', thought: true }] }, index: 0 }] }),
        JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'weather', args: { location: 'Paris' } }, thoughtSignature: 'sig-stream' }] }, index: 0 }] }),
        JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 4, thoughtsTokenCount: 5 } }),
      ],
      framing: 'gemini',
      splitAt: 13,
    });
    const stream = await client.chat.completions.create({ model: 'google/gemini-3-pro', messages: [{ role: 'user', content: 'Paris?' }], stream: true });
    const chunks: Json[] = [];
    for await (const c of stream) chunks.push(c as unknown as Json);
    const deltas = chunks.map((c) => c.choices[0]?.delta ?? {});
    const call = deltas.flatMap((d) => d.tool_calls ?? []).find((t: Json) => t.id);
    const details = deltas.flatMap((d) => d.reasoning_details ?? []);
    assert.deepEqual(details, [{ type: 'reasoning.encrypted', data: 'sig-stream', id: call.id, format: 'google-gemini-v1' }]);
    assert.equal(deltas.map((d) => d.reasoning ?? '').join(''), 'Thinking about it');
    assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12, completion_tokens_details: { reasoning_tokens: 5 }, cost: 0.000021 });

    await client.chat.completions.create({
      model: 'google/gemini-3-pro',
      messages: [
        { role: 'user', content: 'Paris?' },
        { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: { name: 'weather', arguments: '{"location":"Paris"}' } }], reasoning_details: details } as never,
        { role: 'tool', tool_call_id: call.id, content: 'sunny' },
      ],
    });
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).contents[1], {
      role: 'model',
      parts: [{ functionCall: { name: 'weather', args: { location: 'Paris' } }, thoughtSignature: 'sig-stream' }],
    });
  });

  test('Gemini 3 tool calls without echoed signatures get the skip sentinel (and a warning); other models do not', async () => {
    const messages = [
      { role: 'user', content: 'Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{}' } }, { id: 'call_b', type: 'function', function: { name: 'time', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: 'noon' },
    ];
    await client.chat.completions.create({ model: 'google/gemini-3-pro', messages } as never);
    assert.deepEqual((upstream.requests.at(-1)!.json as Json).contents[1].parts, [
      { functionCall: { name: 'weather', args: {} }, thoughtSignature: 'skip_thought_signature_validator' },
      { functionCall: { name: 'time', args: {} } },
    ]);
    assert.deepEqual((await lastRecordDetail()).warnings, ['messages[1]: no Gemini thought signature for its tool calls (reasoning_details not echoed); sent skip_thought_signature_validator']);
    const body = await sent({ messages });
    assert.deepEqual(body.contents[1].parts, [{ functionCall: { name: 'weather', args: {} } }, { functionCall: { name: 'time', args: {} } }]);
  });
});
