/**
 * Remembers the site JWTs that passed verification, so a client sending the same token again costs
 * a map lookup instead of a signature check. Only the time-dependent claim (`exp`) can change its
 * verdict, and it is checked on every hit. What can take a JWT's access away (the user disabled or
 * deleted, a password change bumping the credentials version) is not kept here: the plugin checks the
 * user as they are now on every request, through the site's user lookup (a read cache bounded by the
 * change feed and a 1 s maximum age, see store/read-cache.ts).
 */
import { hash } from 'node:crypto';
import type { Clock } from '../../lib/clock.ts';
import type { JwtVerifier, VerifiedJwt } from './jwt.ts';

export interface JwtCacheOptions {
  clock: Clock;
  /** The verifier's leeway for `exp`, in seconds (default 30, as jwt.ts). */
  leewaySeconds?: number;
  /** Most tokens remembered; the oldest is forgotten first (default 10 000). */
  maxEntries?: number;
}

/** Wraps `verifier`; failures are never cached, so every bad token is checked in full. */
export function cacheVerifiedJwts(verifier: JwtVerifier, opts: JwtCacheOptions): JwtVerifier {
  const leeway = opts.leewaySeconds ?? 30;
  const maxEntries = opts.maxEntries ?? 10_000;
  const cache = new Map<string, VerifiedJwt>();
  return {
    async verify(token) {
      // Keyed by digest: the raw tokens are not kept in memory past their request.
      const key = typeof token === 'string' ? hash('sha256', token, 'base64') : '';
      const hit = key ? cache.get(key) : undefined;
      if (hit) {
        // Same rule as jose: expired once now >= exp + leeway. Past it, the verifier says why.
        if (Math.floor(opts.clock.now() / 1000) < hit.exp + leeway) return hit;
        cache.delete(key);
      }
      const verified = await verifier.verify(token);
      if (key) {
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string);
        cache.set(key, Object.freeze(verified));
      }
      return verified;
    },
  };
}
