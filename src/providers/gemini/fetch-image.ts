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
  /** Most image URLs fetched for one request. */
  max_images_per_request: number;
  /** Most bytes fetched for one request, all its images together. */
  max_total_bytes_per_request: number;
}

/** What one request may still fetch (shared by its parallel image downloads). */
interface RequestBudget {
  readonly maxTotalBytes: number;
  remainingBytes: number;
}

/** Why a fetch was refused; becomes the 400's message. */
class ImageFetchFailure extends Error {}

/**
 * What a refused or failed host resolution or connection says: the same words whatever DNS
 * answered (a private address, no address, no such name, a refused connection), so the error
 * cannot be used to map names and addresses of the gateway's network.
 */
const UNREACHABLE = 'the host cannot be reached or is not allowed (only public addresses are fetched)';

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
      if (err) return callback(new ImageFetchFailure(UNREACHABLE), []);
      if (!allowPrivate && addresses.some((a) => nonPublicReason(a.address) !== null)) return callback(new ImageFetchFailure(UNREACHABLE), []);
      if (addresses.length === 0) return callback(new ImageFetchFailure(UNREACHABLE), []);
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

/** Stop reading a body: undici reports the abort as an error event, which nobody else listens to. */
function discard(body: { destroy(): unknown; on(event: 'error', listener: () => void): unknown }): void {
  body.on('error', () => undefined);
  body.destroy();
}

const overBudget = (budget: RequestBudget) =>
  new ImageFetchFailure(`the images of this request are larger than ${budget.maxTotalBytes} bytes in total (image_fetch.max_total_bytes_per_request)`);

async function readCapped(body: AsyncIterable<Uint8Array> & { destroy(): unknown; on(event: 'error', listener: () => void): unknown }, maxBytes: number, budget: RequestBudget): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    budget.remainingBytes -= chunk.byteLength;
    if (size > maxBytes) {
      discard(body);
      throw new ImageFetchFailure(`the image is larger than ${maxBytes} bytes`);
    }
    if (budget.remainingBytes < 0) {
      discard(body);
      throw overBudget(budget);
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
 * - the body may not exceed `max_bytes` (checked on `content-length` and while reading), nor
 *   what is left of the request's `max_total_bytes_per_request`;
 * - a host that cannot be resolved or reached, or resolves to a refused address, gets one
 *   message ({@link UNREACHABLE}) that reveals nothing of what DNS answered;
 * - the whole fetch must end within `timeout_ms`;
 * - the media type is the response's `image/*` content type, else sniffed from the first bytes
 *   (PNG, JPEG, GIF, WebP, HEIC); anything else is refused.
 *
 * @param param the request field the URL came from, e.g. `messages[0].content[1].image_url.url`.
 * @returns the image as `inlineData`.
 * @throws GatewayError `invalid_request` (400) naming `param`, with the reason.
 * @see https://ai.google.dev/gemini-api/docs/image-understanding#inline-image
 */
export async function fetchImage(url: string, param: string, settings: ImageFetchSettings, budget: RequestBudget = newBudget(settings)): Promise<GeminiBlob> {
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
        discard(res.body);
        throw new ImageFetchFailure(`the image is larger than ${settings.max_bytes} bytes (content-length ${length})`);
      }
      if (Number.isFinite(length) && length > budget.remainingBytes) {
        discard(res.body);
        throw overBudget(budget);
      }
      const bytes = await readCapped(res.body, settings.max_bytes, budget);
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
    // Connection errors name the address connected to: say nothing more than for a refused host.
    else reason = UNREACHABLE;
    throw new GatewayError('invalid_request', `${param}: could not fetch the image: ${reason}`, { param, cause: err });
  } finally {
    void agent.destroy().catch(() => undefined);
  }
}

function newBudget(settings: ImageFetchSettings): RequestBudget {
  return { maxTotalBytes: settings.max_total_bytes_per_request, remainingBytes: settings.max_total_bytes_per_request };
}

/**
 * An image fetcher for one request: {@link fetchImage} under the request's caps. The calls a
 * conversion starts together (synchronously) are counted before any download begins, so a
 * request with more than `max_images_per_request` image URLs is refused without fetching any;
 * every download draws on one `max_total_bytes_per_request` budget.
 * @throws GatewayError `invalid_request` (400) naming the first image URL over the count.
 */
export function requestImageFetcher(settings: ImageFetchSettings): (url: string, param: string) => Promise<GeminiBlob> {
  const budget = newBudget(settings);
  let count = 0;
  let firstOver: string | undefined;
  return async (url, param) => {
    count++;
    if (count > settings.max_images_per_request && firstOver === undefined) firstOver = param;
    // Let every synchronously started call be counted first.
    await Promise.resolve();
    if (firstOver !== undefined) {
      throw new GatewayError('invalid_request', `${firstOver}: a request may have at most ${settings.max_images_per_request} image URLs to fetch (image_fetch.max_images_per_request)`, { param: firstOver });
    }
    return fetchImage(url, param, settings, budget);
  };
}
