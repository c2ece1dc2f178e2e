/**
 * Issues and verifies the site's own JWTs. Verification checks shape, then algorithm (fixed by
 * configuration, never taken from the token), then signature, then claims, and rejects each with
 * the spec's site error: SEGMENT_FAULT, INVALID_SIGNATURE or INVALID_TOKEN.
 */
import { randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import type { JWTHeaderParameters, JWTPayload } from 'jose';
import type { Clock } from '../../lib/clock.ts';
import { Unauthenticated } from '../../lib/errors.ts';
import type { SiteJwtKeys } from './jwt-keys.ts';

/** Longest token accepted; ours are well under 1 KiB, so anything larger is not one of ours. */
export const MAX_JWT_LENGTH = 8 * 1024;

/** Who a token is for. */
export interface JwtSubject {
  /** The user id. */
  sub: string;
  /** The username. */
  name: string;
  /** The user's credentials version: the caller refuses tokens whose `ver` is older than the user's. */
  ver: number;
}

export interface IssuedJwt {
  token: string;
  /** Unix seconds. */
  iat: number;
  /** Unix seconds. */
  exp: number;
}

export interface VerifiedJwt extends JwtSubject {
  iat: number;
  exp: number;
  jti: string;
}

export interface JwtIssuer {
  /** Signs a token for `subject`, valid from now for the configured lifetime. */
  issue(subject: JwtSubject): Promise<IssuedJwt>;
}

export interface JwtVerifier {
  /**
   * Checks a token issued by {@link createJwtIssuer} and returns its claims.
   *
   * @throws Unauthenticated with reason SEGMENT_FAULT (not a well-formed JWT), INVALID_SIGNATURE
   *   (another algorithm, or a signature that does not match) or INVALID_TOKEN (expired, not yet
   *   valid, another issuer or audience, claims missing or of the wrong type).
   */
  verify(token: string): Promise<VerifiedJwt>;
}

export interface JwtIssuerOptions {
  keys: SiteJwtKeys;
  issuer: string;
  audience: string;
  ttlSeconds: number;
  clock: Clock;
}

export interface JwtVerifierOptions {
  keys: SiteJwtKeys;
  issuer: string;
  audience: string;
  clock: Clock;
  /** Clock difference tolerated between nodes for `exp`, `nbf` and `iat`; default 30. */
  leewaySeconds?: number;
}

/**
 * Creates the issuer the token endpoint uses.
 *
 * @throws Error when `ttlSeconds` is not a positive integer.
 */
export function createJwtIssuer({ keys, issuer, audience, ttlSeconds, clock }: JwtIssuerOptions): JwtIssuer {
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) throw new Error('ttlSeconds must be a positive integer');
  const header: JWTHeaderParameters = keys.kid === undefined
    ? { alg: keys.alg, typ: 'JWT' }
    : { alg: keys.alg, typ: 'JWT', kid: keys.kid };

  return {
    async issue({ sub, name, ver }) {
      // The verifier refuses such tokens, so issuing one would only hide the caller's bug.
      if (typeof sub !== 'string' || sub === '') throw new TypeError('sub must be a non-empty string');
      if (typeof name !== 'string' || name === '') throw new TypeError('name must be a non-empty string');
      if (!isVersion(ver)) throw new TypeError('ver must be a non-negative integer');

      const iat = Math.floor(clock.now() / 1000);
      const exp = iat + ttlSeconds;
      const token = await new SignJWT({ name, ver })
        .setProtectedHeader(header)
        .setSubject(sub)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setJti(randomUUID())
        .sign(keys.signingKey);
      return { token, iat, exp };
    },
  };
}

/**
 * Creates the verifier the protection plugin uses for `Authorization: Bearer <jwt>`.
 *
 * @throws Error when `leewaySeconds` is not a non-negative integer.
 */
export function createJwtVerifier({ keys, issuer, audience, clock, leewaySeconds = 30 }: JwtVerifierOptions): JwtVerifier {
  if (!Number.isSafeInteger(leewaySeconds) || leewaySeconds < 0) throw new Error('leewaySeconds must be a non-negative integer');

  return {
    async verify(token) {
      const { header, signed } = checkShape(token);
      // RFC 8725 §3.1: the algorithm comes from configuration. Trusting the header would let `none`,
      // or HS256 keyed with our public RSA key, pass as a valid signature.
      if (header.alg !== keys.alg) throw invalidSignature('JWT algorithm is not allowed.');
      // An unsecured JWT (empty signature) is well formed but unsigned: the signature row, not SEGMENT_FAULT.
      if (!signed) throw invalidSignature('JWT signature is invalid.');
      // A kid names the key that signed: one we do not publish is not ours, whatever the signature.
      // Tokens without a kid are checked against our one key.
      if (keys.kid !== undefined && 'kid' in header && header.kid !== keys.kid) {
        throw invalidSignature('JWT key id is not in the key set.');
      }

      const nowMs = clock.now();
      const nowSeconds = Math.floor(nowMs / 1000);
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, keys.verificationKey, {
          algorithms: [keys.alg],
          issuer,
          audience,
          clockTolerance: leewaySeconds,
          currentDate: new Date(nowMs),
          requiredClaims: ['sub', 'exp', 'iat', 'jti'],
        }));
      } catch (error) {
        throw fromJoseError(error);
      }
      return checkClaims(payload, nowSeconds, leewaySeconds);
    },
  };
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The token's header when it is three base64url segments whose first two are JSON objects, and
 * whether it is signed: an empty third segment is RFC 7519's unsecured JWT, refused later with
 * INVALID_SIGNATURE (the spec's row for it) rather than SEGMENT_FAULT.
 */
function checkShape(token: unknown): { header: Record<string, unknown>; signed: boolean } {
  // Length first: nothing below should run on a megabyte of attacker input.
  if (typeof token !== 'string' || token.length > MAX_JWT_LENGTH) throw segmentFault();
  const segments = token.split('.');
  if (segments.length !== 3) throw segmentFault();
  const signed = segments[2] !== '';
  for (const segment of signed ? segments : segments.slice(0, 2)) {
    // A length of 4n+1 cannot be base64: Buffer would silently drop the stray character.
    if (!BASE64URL.test(segment) || segment.length % 4 === 1) throw segmentFault();
  }
  const header = decodeJsonObject(segments[0]);
  decodeJsonObject(segments[1]);
  return { header, signed };
}

function decodeJsonObject(segment: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(strictUtf8.decode(Buffer.from(segment, 'base64url')));
  } catch {
    throw segmentFault();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw segmentFault();
  return value as Record<string, unknown>;
}

/** Checks what jose does not: `iat` not in the future, and our own claims' types. */
function checkClaims(payload: JWTPayload, nowSeconds: number, leewaySeconds: number): VerifiedJwt {
  const { sub, name, ver, iat, exp, jti } = payload;
  // jose accepts a non-integer or 1e400 (parsed as Infinity) for these; a token we issued never has one.
  if (!Number.isSafeInteger(exp)) throw invalidToken('JWT "exp" claim is invalid.');
  if (!Number.isSafeInteger(iat)) throw invalidToken('JWT "iat" claim is invalid.');
  // jose checks `iat` only with maxTokenAge; a token issued ahead of our clock is not valid yet.
  if ((iat as number) > nowSeconds + leewaySeconds) throw invalidToken('JWT is not yet valid.');
  if (typeof sub !== 'string' || sub === '') throw invalidToken('JWT "sub" claim is invalid.');
  if (typeof name !== 'string' || name === '') throw invalidToken(name === undefined ? 'JWT is missing the "name" claim.' : 'JWT "name" claim is invalid.');
  if (!isVersion(ver)) throw invalidToken(ver === undefined ? 'JWT is missing the "ver" claim.' : 'JWT "ver" claim is invalid.');
  if (typeof jti !== 'string' || jti === '') throw invalidToken('JWT "jti" claim is invalid.');
  return { sub, name, ver, iat: iat as number, exp: exp as number, jti };
}

function isVersion(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** Maps jose's error classes to the spec's site errors; jose's own errors never leave this file. */
function fromJoseError(error: unknown): unknown {
  if (!(error instanceof errors.JOSEError)) return error;
  switch (error.code) {
    case 'ERR_JWT_EXPIRED':
      return invalidToken('JWT has expired.');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = error as errors.JWTClaimValidationFailed;
      if (reason === 'missing') return invalidToken(`JWT is missing the "${claim}" claim.`);
      if (reason === 'invalid') return invalidToken(`JWT "${claim}" claim is invalid.`);
      if (claim === 'iss') return invalidToken('JWT issuer is invalid.');
      if (claim === 'aud') return invalidToken('JWT audience is invalid.');
      if (claim === 'nbf' || claim === 'iat') return invalidToken('JWT is not yet valid.');
      return invalidToken(`JWT "${claim}" claim is invalid.`);
    }
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return invalidSignature('JWT algorithm is not allowed.');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
    // An unrecognised "crit" extension: the token asks for processing we cannot do, so its
    // signature cannot be trusted.
    case 'ERR_JOSE_NOT_SUPPORTED':
      return invalidSignature('JWT signature is invalid.');
    default:
      // JWSInvalid / JWTInvalid: malformed header parameters (crit, b64) or an unusable payload.
      return segmentFault();
  }
}

function segmentFault(): Unauthenticated {
  return new Unauthenticated('SEGMENT_FAULT', 'jwt', 'JWT format is incorrect.');
}

function invalidSignature(description: string): Unauthenticated {
  return new Unauthenticated('INVALID_SIGNATURE', 'jwt', description);
}

function invalidToken(description: string): Unauthenticated {
  return new Unauthenticated('INVALID_TOKEN', 'jwt', description);
}
