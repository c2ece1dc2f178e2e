/**
 * The persistent NameID (SAML core §8.3.7): opaque, stable per user and application, and different for
 * each application, so two service providers cannot match their users by it, and it reveals nothing of
 * the user. `secret` is derived by the caller from the master key with HKDF-SHA256 (info
 * 'saml-persistent-nameid'), so it never needs storing and every node computes the same value.
 */
import { createHmac } from 'node:crypto';

/** The persistent NameID: an opaque value stable per user and application, revealing nothing (keyed HMAC). */
export function persistentNameId(secret: Buffer, applicationUuid: string, userId: number): string {
  return createHmac('sha256', secret).update(`${applicationUuid}:${userId}`).digest('base64url');
}
