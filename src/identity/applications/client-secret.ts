/**
 * An OAUTH application's client secret. panva's oidc-provider compares client secrets in plain text,
 * so the secret must be recoverable; instead of sealing it, it is derived from the master key and a
 * random per-application salt, and only the salt and the secret's SHA-256 are stored.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { safeEqual, sha256Hex } from '../../lib/tokens.ts';

const LABEL = 'latchkey application client secret\0';

/** A new random salt (128 bits, base64url). */
export const newClientSecretSalt = (): string => randomBytes(16).toString('base64url');

/** base64url(HMAC-SHA256(masterKey, label + uuid + NUL + salt)): 256 bits, 43 characters. */
export function deriveClientSecret(masterKey: Buffer, uuid: string, salt: string): string {
  return createHmac('sha256', masterKey).update(`${LABEL}${uuid}\0${salt}`).digest('base64url');
}

/** True when `secret` matches the stored SHA-256 (constant time). */
export function clientSecretMatches(secret: string, storedHash: string): boolean {
  return safeEqual(sha256Hex(secret), storedHash);
}
