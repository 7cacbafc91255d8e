import { GatewayError } from '../../errors/gateway-error.js';
import type { AnthropicDocumentBlock, AnthropicImageBlock, AnthropicImageMediaType } from './anthropic-wire-types.js';

const IMAGE_TYPES: Readonly<Record<string, AnthropicImageMediaType>> = {
  'image/jpeg': 'image/jpeg',
  'image/jpg': 'image/jpeg',
  'image/png': 'image/png',
  'image/gif': 'image/gif',
  'image/webp': 'image/webp',
};

/** A parsed `data:` URL: lower-cased media type, whether the payload is base64, the payload. */
interface DataUrl {
  mediaType: string;
  base64: boolean;
  data: string;
}

/** Parse `data:[<media type>][;param…][;base64],<data>`; null when `url` is not a data URL. */
export function parseDataUrl(url: string): DataUrl | null {
  const m = /^data:([^,]*),(.*)$/is.exec(url);
  if (!m) return null;
  const meta = (m[1] ?? '').split(';').map((s) => s.trim().toLowerCase());
  return { mediaType: meta[0] || 'text/plain', base64: meta.includes('base64'), data: (m[2] ?? '').replace(/\s+/g, '') };
}

const invalid = (param: string, message: string) => new GatewayError('invalid_request', `${param}: ${message}`, { param });

/** A base64 payload of `mediaType` as an image or PDF/text document block, or an error. */
function blockFor(mediaType: string, base64: string, param: string): AnthropicImageBlock | AnthropicDocumentBlock {
  const image = IMAGE_TYPES[mediaType];
  if (image) return { type: 'image', source: { type: 'base64', media_type: image, data: base64 } };
  if (mediaType === 'application/pdf') return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64 } };
  if (mediaType === 'text/plain') return { type: 'document', source: { type: 'text', media_type: 'text/plain', data: Buffer.from(base64, 'base64').toString('utf8') } };
  throw invalid(param, `media type ${JSON.stringify(mediaType)} is not supported by Anthropic (images: jpeg, png, gif, webp; documents: application/pdf, text/plain)`);
}

/**
 * Convert an `image_url` part: a base64 data URL becomes an image block with a base64 source
 * (a `data:application/pdf` URL becomes a document block), an http(s) URL an image block with a
 * url source. `detail` has no Anthropic equivalent and is dropped.
 * @param param the part's path for errors, e.g. `messages[1].content[0]`.
 * @throws GatewayError `invalid_request` (param `….image_url.url`) for other URLs and media types.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/vision
 */
export function convertImageUrl(url: string, param: string): AnthropicImageBlock | AnthropicDocumentBlock {
  const at = `${param}.image_url.url`;
  const data = parseDataUrl(url);
  if (data) {
    if (!data.base64) throw invalid(at, 'data URLs must be base64-encoded (data:<media type>;base64,<data>)');
    return blockFor(data.mediaType, data.data, at);
  }
  if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
  throw invalid(at, 'must be an http(s) URL or a base64 data: URL');
}

/**
 * Convert a `file` part. `file_data` may be a base64 data URL (PDF → document with a base64
 * source, text/plain → document with a text source, images → image block) or raw base64 of a
 * PDF (recognised by a `.pdf` filename or the `%PDF` magic bytes).
 * @throws GatewayError `invalid_request` for `file_id` (not portable to Anthropic), a missing
 *   `file_data`, or an unsupported media type.
 * @see https://docs.anthropic.com/en/docs/build-with-claude/pdf-support
 */
export function convertFile(file: { filename?: string; file_data?: string; file_id?: string }, param: string): AnthropicImageBlock | AnthropicDocumentBlock {
  const at = `${param}.file.file_data`;
  if (typeof file.file_data !== 'string' || file.file_data === '') {
    if (file.file_id) throw invalid(`${param}.file.file_id`, 'file ids cannot be sent to Anthropic; send the file as file_data (a base64 data: URL)');
    throw invalid(at, 'is required');
  }
  const data = parseDataUrl(file.file_data);
  if (data) {
    if (!data.base64) throw invalid(at, 'data URLs must be base64-encoded (data:<media type>;base64,<data>)');
    return blockFor(data.mediaType, data.data, at);
  }
  const raw = file.file_data.replace(/\s+/g, '');
  if (/\.pdf$/i.test(file.filename ?? '') || raw.startsWith('JVBERi')) return blockFor('application/pdf', raw, at);
  throw invalid(at, 'must be a base64 data: URL (data:application/pdf;base64,…) or the raw base64 of a PDF');
}
