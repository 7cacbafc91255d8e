import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** The environment variable holding the key that encrypts secrets stored in the database. */
export const SECRET_KEY_ENV = 'OP_CATALOG_SECRET_KEY';

/** What a sealed value starts with: the format's version (AES-256-GCM, 12-byte IV, 16-byte tag). */
const PREFIX = 'opsec1:';

/**
 * Encrypts and decrypts short secrets (provider API keys and headers entered through the catalog
 * API) with AES-256-GCM from node:crypto. The key is `OP_CATALOG_SECRET_KEY`: 32 bytes as 64 hex
 * digits or as base64; anything else is refused so a typo cannot silently weaken it. A sealed
 * value is `opsec1:<iv>.<tag>.<ciphertext>` (base64url parts) and carries a key id (the first 8
 * hex digits of the key's SHA-256) so a value sealed under another key is named as such.
 *
 * @see https://nodejs.org/api/crypto.html#class-cipher (aes-256-gcm)
 */
export class SecretBox {
  private readonly key: Buffer;
  /** First 8 hex digits of SHA-256 of the key: which key sealed a value (not secret). */
  readonly keyId: string;

  /** @throws Error naming the variable when `material` is not 32 bytes in hex or base64. */
  constructor(material: string) {
    const key = parseKey(material.trim());
    if (!key) throw new Error(`${SECRET_KEY_ENV} must be 32 bytes as 64 hex digits or as base64 (e.g. openssl rand -base64 32)`);
    this.key = key;
    this.keyId = createHash('sha256').update(key).digest('hex').slice(0, 8);
  }

  /** Seal `plain`: a fresh random IV each time, so equal secrets seal differently. */
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(this.keyId));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return `${PREFIX}${this.keyId}.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${body.toString('base64url')}`;
  }

  /**
   * Open a value {@link seal} made.
   * @throws Error when the value is not sealed, was sealed under another key (named by key id),
   * or was altered (the GCM tag does not match).
   */
  open(sealed: string): string {
    if (!isSealed(sealed)) throw new Error('not a sealed secret');
    const [keyId, iv, tag, body] = sealed.slice(PREFIX.length).split('.');
    if (keyId !== this.keyId) throw new Error(`sealed under another ${SECRET_KEY_ENV} (key id ${keyId}, this one is ${this.keyId})`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv ?? '', 'base64url'));
    decipher.setAAD(Buffer.from(this.keyId));
    decipher.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(body ?? '', 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new Error('a sealed secret was altered (its authentication tag does not match)');
    }
  }
}

/** Whether `value` is the output of {@link SecretBox.seal}. */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(PREFIX);
}

/** The secret box of the environment's `OP_CATALOG_SECRET_KEY`, or undefined when it is unset. @throws Error when it is set but malformed. */
export function secretBoxFromEnv(env: NodeJS.ProcessEnv = process.env): SecretBox | undefined {
  const material = env[SECRET_KEY_ENV];
  return material ? new SecretBox(material) : undefined;
}

function parseKey(material: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(material)) return Buffer.from(material, 'hex');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(material)) return undefined;
  const key = Buffer.from(material, material.includes('-') || material.includes('_') ? 'base64url' : 'base64');
  return key.length === 32 ? key : undefined;
}
