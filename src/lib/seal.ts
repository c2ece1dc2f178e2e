/**
 * AES-256-GCM sealing for secrets that must stay recoverable (customer API keys, TOTP secrets).
 * Output: "v1.<iv>.<tag>.<ciphertext>" in base64url; `aad` binds a sealed value to its owner so a
 * ciphertext copied onto another row does not open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export interface Sealer {
  seal(plaintext: string, aad: string): string;
  /** @throws Error when the value was tampered with or sealed under another key or aad. */
  open(sealed: string, aad: string): string;
}

export function createSealer(masterKey: Buffer): Sealer {
  if (masterKey.length !== 32) throw new Error('master key must be 32 bytes');
  return {
    seal(plaintext, aad) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', masterKey, iv);
      cipher.setAAD(Buffer.from(aad));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed, aad) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown sealed format');
      const decipher = createDecipheriv('aes-256-gcm', masterKey, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(aad));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
