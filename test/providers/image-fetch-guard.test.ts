/**
 * The image-fetch guard (issue 9 §1): IPv6 forms of private IPv4 addresses (IPv4-mapped and
 * -translated, NAT64 and local-use NAT64, Teredo) are refused; errors say nothing of what DNS
 * answered or which address a connection went to; each request may fetch at most
 * `image_fetch.max_images_per_request` images and `max_total_bytes_per_request` bytes in total.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { nonPublicReason } from '../../src/providers/gemini/ip-address-policy.js';
import { fetchImage, requestImageFetcher, type ImageFetchSettings } from '../../src/providers/gemini/fetch-image.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/replay-upstream.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(592, 7)]); // 600 bytes
const SETTINGS: ImageFetchSettings = { max_bytes: 10_000, timeout_ms: 5000, allow_private_addresses: false, max_images_per_request: 16, max_total_bytes_per_request: 32 * 1024 * 1024 };
const UNREACHABLE = 'the host cannot be reached or is not allowed (only public addresses are fetched)';

let images: http.Server;
let imageBase: string;
let imageHits = 0;

before(async () => {
  images = http.createServer((req, res) => {
    imageHits++;
    if (req.url?.startsWith('/img')) {
      res.writeHead(200, { 'content-type': 'image/png', ...(req.url.includes('nolength') ? {} : { 'content-length': PNG.length }) });
      return res.end(PNG);
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});

after(async () => {
  await new Promise((resolve) => images?.close(resolve));
});

describe('address policy', () => {
  test('IPv6 forms that reach private IPv4 space are refused; public ones are not', () => {
    const blocked: [string, string][] = [
      ['::ffff:10.0.0.1', 'private'], ['::ffff:7f00:1', 'loopback'], ['::ffff:0:0', 'this network'],
      ['::ffff:0:10.0.0.1', 'private'], ['::ffff:0:7f00:1', 'loopback'], ['::ffff:0:a9fe:a9fe', 'link-local'],
      ['64:ff9b::192.168.0.1', 'private'], ['64:ff9b::7f00:1', 'loopback'],
      ['64:ff9b:1::8.8.8.8', 'local-use NAT64'], ['64:ff9b:1:ffff::1', 'local-use NAT64'], ['64:ff9b:2::1', 'reserved'],
      ['2001::1', 'Teredo'], ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'], ['2001:0:a00:1::f5ff:fffe', 'Teredo'],
    ];
    for (const [address, reason] of blocked) assert.equal(nonPublicReason(address), reason, address);
    for (const address of ['::ffff:0:8.8.8.8', '64:ff9b::8.8.8.8', '2001:4860:4860::8888', '2001:1::1:2']) {
      assert.equal(nonPublicReason(address), null, address);
    }
  });
});

describe('fetch errors reveal nothing of DNS or the address connected to', () => {
  const expectReason = async (url: string, settings: ImageFetchSettings, reason: string, forbidden: RegExp[] = []) => {
    const err = await fetchImage(url, 'p', settings).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof GatewayError, url);
    assert.equal(err.message, `p: could not fetch the image: ${reason}`, url);
    for (const re of forbidden) assert.doesNotMatch(err.message, re, url);
  };

  test('a name resolving to loopback, a name that does not resolve, a refused connection: one message', async () => {
    const port = new URL(imageBase).port;
    const hits = imageHits;
    await expectReason(`http://localhost:${port}/img`, SETTINGS, UNREACHABLE, [/127\.0\.0\.1/, /::1/, /loopback/]);
    await expectReason('http://no-such-host.invalid/img.png', SETTINGS, UNREACHABLE, [/ENOTFOUND/, /EAI_AGAIN/]);
    // Allowed to connect to private addresses, but nothing listens: the address is not named.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expectReason(`http://localhost:${closedPort}/img`, { ...SETTINGS, allow_private_addresses: true }, UNREACHABLE, [/127\.0\.0\.1/, /ECONNREFUSED/]);
    assert.equal(imageHits, hits);
  });

  test('IP-literal hosts in the forms above are refused before connecting', async () => {
    for (const host of ['[::ffff:0:7f00:1]', '[64:ff9b:1::a00:1]', '[2001:0:a00:1::f5ff:fffe]']) {
      const err = await fetchImage(`http://${host}/img`, 'p', SETTINGS).then(() => null, (e: unknown) => e as GatewayError);
      assert.match(String(err?.message), /address, which is not allowed$/, host);
    }
  });
});

describe('per-request caps (image_fetch.max_images_per_request, max_total_bytes_per_request)', () => {
  let upstream: Upstream;
  let gw: TestGateway;
  before(async () => {
    upstream = await startUpstream();
    upstream.setDefault({ json: { candidates: [{ content: { role: 'model', parts: [{ text: 'ok' }] }, finishReason: 'STOP' }], usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 } } });
    gw = await startGateway({
      providers: [{ id: 'gem', kind: 'gemini', base_url: new URL(upstream.url).origin, api_key: 'k', image_fetch: { allow_private_addresses: true, max_images_per_request: 3, max_total_bytes_per_request: 1500 } }],
      models: [{ id: 'google/g', context_length: 100_000, architecture: { input_modalities: ['text', 'image'] }, endpoints: [{ provider: 'gem', upstream_model: 'g', supported_parameters: ['max_tokens'] }] }],
    });
  });
  after(async () => {
    await gw?.close();
    await upstream?.close();
  });

  const post = async (urls: string[]) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gw.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'google/g', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }, ...urls.map((url) => ({ type: 'image_url', image_url: { url } }))] }] }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  test('two images of 600 bytes fit; a request with more images than allowed is a 400 before any fetch', async () => {
    const ok = await post([`${imageBase}/img1`, `${imageBase}/img2`]);
    assert.equal(ok.status, 200);
    const hits = imageHits;
    const many = await post([1, 2, 3, 4, 5].map((i) => `${imageBase}/img${i}`));
    assert.equal(many.status, 400);
    assert.equal(many.body.error.code, 'invalid_request');
    assert.equal(many.body.error.param, 'messages[0].content[4].image_url.url');
    assert.equal(many.body.error.message, 'messages[0].content[4].image_url.url: a request may have at most 3 image URLs to fetch (image_fetch.max_images_per_request)');
    assert.equal(imageHits, hits, 'no image was fetched');
  });

  test('three images of 600 bytes exceed 1500 bytes in total: a 400, with or without content-length', async () => {
    for (const suffix of ['', '-nolength']) {
      const res = await post([1, 2, 3].map((i) => `${imageBase}/img${i}${suffix}`));
      assert.equal(res.status, 400, suffix);
      assert.match(res.body.error.message, /could not fetch the image: the images of this request are larger than 1500 bytes in total \(image_fetch\.max_total_bytes_per_request\)$/);
    }
  });

  test('the caps are per request, not per gateway: the next request fetches again', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await post([`${imageBase}/img1`, `${imageBase}/img2`])).status, 200);
  });

  test('defaults: 16 images, 32 MiB', async () => {
    const fetcher = requestImageFetcher(SETTINGS);
    assert.equal(typeof fetcher, 'function');
    const { imageFetchSchema } = await import('../../src/providers/gemini/gemini-config-schema.js');
    const d = imageFetchSchema.parse({});
    assert.equal(d.max_images_per_request, 16);
    assert.equal(d.max_total_bytes_per_request, 33_554_432);
  });
});
