import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GeminiBlob } from './gemini-wire-types.js';
import { nonPublicReason } from './ip-address-policy.js';

/** Most redirects followed for one image. */
export const MAX_IMAGE_REDIRECTS = 3;

/** How image URLs are fetched (the provider's `image_fetch` settings). */
export interface ImageFetchSettings {
  /** Largest image, in bytes. */
  max_bytes: number;
  /** Whole fetch (every redirect, headers and body), in ms. */
  timeout_ms: number;
  /** Allow loopback, private and link-local addresses. */
  allow_private_addresses: boolean;
}

/** Why a fetch was refused; becomes the 400's message. */
class ImageFetchFailure extends Error {}

/** Media types sniffed from the first bytes when the server sends no usable `content-type`. */
const SIGNATURES: ReadonlyArray<readonly [string, (b: Buffer) => boolean]> = [
  ['image/png', (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ['image/jpeg', (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ['image/gif', (b) => b.subarray(0, 6).toString('latin1') === 'GIF87a' || b.subarray(0, 6).toString('latin1') === 'GIF89a'],
  ['image/webp', (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP'],
  ['image/heic', (b) => b.subarray(4, 8).toString('latin1') === 'ftyp' && /^(heic|heix|mif1|msf1)$/.test(b.subarray(8, 12).toString('latin1'))],
];

function sniff(bytes: Buffer): string | undefined {
  return SIGNATURES.find(([, test]) => test(bytes))?.[0];
}

/**
 * A `dns.lookup` replacement for the image fetch connections: resolves every address of the
 * host and refuses the connection when any of them is not public (unless allowed). The socket
 * connects to the very addresses checked, so a DNS answer cannot change between the check and
 * the connection.
 */
function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: { family?: number | string; all?: boolean; hints?: number },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : typeof options.family === 'number' ? options.family : 0;
    dnsLookup(hostname, { all: true, family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, []);
      if (!allowPrivate) {
        for (const a of addresses) {
          const reason = nonPublicReason(a.address);
          if (reason) return callback(new ImageFetchFailure(`${hostname} resolves to a ${reason} address (${a.address}), which is not allowed`), []);
        }
      }
      if (addresses.length === 0) return callback(new ImageFetchFailure(`${hostname} has no address`), []);
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

/** Check one URL (the first, or a redirect target) before connecting. */
function checkUrl(url: URL, allowPrivate: boolean): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ImageFetchFailure(`unsupported URL scheme ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!allowPrivate && isIP(host) !== 0) {
    const reason = nonPublicReason(host);
    if (reason) throw new ImageFetchFailure(`${host} is a ${reason} address, which is not allowed`);
  }
}

async function readCapped(body: AsyncIterable<Uint8Array> & { destroy(): unknown }, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      body.destroy();
      throw new ImageFetchFailure(`the image is larger than ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

function causeChain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e && out.length < 8; e = (e as { cause?: unknown }).cause) out.push(e);
  return out;
}

/**
 * Download an image URL so it can be sent inline (Gemini takes no arbitrary image URLs).
 *
 * - http and https only; at most {@link MAX_IMAGE_REDIRECTS} redirects, each target checked;
 * - unless `allow_private_addresses`, every address the host resolves to (`dns.lookup`, all
 *   families) and every IP-literal host must be public: loopback, private, link-local, CGNAT,
 *   multicast, reserved and unspecified addresses are refused (see `ip-address-policy.ts`);
 * - the body may not exceed `max_bytes` (checked on `content-length` and while reading);
 * - the whole fetch must end within `timeout_ms`;
 * - the media type is the response's `image/*` content type, else sniffed from the first bytes
 *   (PNG, JPEG, GIF, WebP, HEIC); anything else is refused.
 *
 * @param param the request field the URL came from, e.g. `messages[0].content[1].image_url.url`.
 * @returns the image as `inlineData`.
 * @throws GatewayError `invalid_request` (400) naming `param`, with the reason.
 * @see https://ai.google.dev/gemini-api/docs/image-understanding#inline-image
 */
export async function fetchImage(url: string, param: string, settings: ImageFetchSettings): Promise<GeminiBlob> {
  const allowPrivate = settings.allow_private_addresses;
  const agent = new Agent({ connect: { lookup: guardedLookup(allowPrivate), timeout: settings.timeout_ms }, connections: 1 });
  const signal = AbortSignal.timeout(settings.timeout_ms);
  try {
    let current: URL;
    try {
      current = new URL(url);
    } catch {
      throw new ImageFetchFailure('not a valid URL');
    }
    for (let hop = 0; ; hop++) {
      checkUrl(current, allowPrivate);
      const res = await request(current, { method: 'GET', dispatcher: agent, signal, headers: { accept: 'image/*' } });
      const location = res.headers.location;
      if (res.statusCode >= 300 && res.statusCode < 400 && location) {
        await res.body.dump();
        if (hop >= MAX_IMAGE_REDIRECTS) throw new ImageFetchFailure(`more than ${MAX_IMAGE_REDIRECTS} redirects`);
        current = new URL(Array.isArray(location) ? location[0]! : location, current);
        continue;
      }
      if (res.statusCode < 200 || res.statusCode >= 300) {
        await res.body.dump();
        throw new ImageFetchFailure(`the server answered HTTP ${res.statusCode}`);
      }
      const length = Number(res.headers['content-length']);
      if (Number.isFinite(length) && length > settings.max_bytes) {
        res.body.destroy();
        throw new ImageFetchFailure(`the image is larger than ${settings.max_bytes} bytes (content-length ${length})`);
      }
      const bytes = await readCapped(res.body, settings.max_bytes);
      const declared = String(res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      const mimeType = declared.startsWith('image/') ? declared : sniff(bytes);
      if (!mimeType) throw new ImageFetchFailure(`not an image (content-type ${declared || 'none'})`);
      return { mimeType, data: bytes.toString('base64') };
    }
  } catch (err) {
    const failure = causeChain(err).find((e) => e instanceof ImageFetchFailure) as ImageFetchFailure | undefined;
    let reason: string;
    if (failure) reason = failure.message;
    else if (signal.aborted) reason = `no complete answer within ${settings.timeout_ms} ms`;
    else reason = (err as Error)?.message || 'the request failed';
    throw new GatewayError('invalid_request', `${param}: could not fetch the image: ${reason}`, { param, cause: err });
  } finally {
    void agent.destroy().catch(() => undefined);
  }
}
