/**
 * The keys the site signs and checks its JWTs with. HS256 derives its secret from the master key, so
 * every node shares it without extra state; RS256 keeps one RSA key in the data dir and publishes its
 * public half as a JWKS. A symmetric secret is never published.
 */
import { createPrivateKey, createPublicKey, createSecretKey, generateKeyPair, hkdfSync, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { link, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { calculateJwkThumbprint } from 'jose';
import type { JWK } from 'jose';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../store/private-files.ts';

export type SiteJwtAlg = 'HS256' | 'RS256';

/** File in the data dir holding the generated RS256 private key (PKCS#8 PEM). */
export const RS256_KEY_FILE = 'site-jwt-rs256.pem';

const HS256_INFO = 'latchkey site jwt hs256';

interface KeysBase {
  /** Sign with this; for HS256 it is the same secret as `verificationKey`. */
  readonly signingKey: KeyObject;
  readonly verificationKey: KeyObject;
  /** The public keys to serve at /.well-known/jwks.json; a fresh copy on every call. */
  jwks(): { keys: JWK[] };
}

export interface Hs256Keys extends KeysBase {
  readonly alg: 'HS256';
  readonly kid: undefined;
}

export interface Rs256Keys extends KeysBase {
  readonly alg: 'RS256';
  /** RFC 7638 JWK thumbprint (SHA-256) of the public key. */
  readonly kid: string;
}

export type SiteJwtKeys = Hs256Keys | Rs256Keys;

export interface LoadSiteJwtKeysOptions {
  alg: SiteJwtAlg;
  /** The 32-byte master key; HS256 derives its secret from it. */
  masterKey: Buffer;
  /** Where the RS256 key is kept when `privateKeyPem` is not given. */
  dataDir: string;
  /** An RSA private key (PKCS#8 or PKCS#1 PEM) to use instead of the data dir's. */
  privateKeyPem?: string;
}

/**
 * Loads (or, for RS256 on first use, creates) the site's JWT keys.
 *
 * @throws Error when the master key is not 32 bytes, or the RS256 key is not an RSA key of at least
 *   2048 bits (RFC 7518 §3.3), or the key file cannot be read or written.
 */
export async function loadSiteJwtKeys(opts: LoadSiteJwtKeysOptions): Promise<SiteJwtKeys> {
  if (opts.alg === 'HS256') return deriveHs256Keys(opts.masterKey);
  if (opts.alg === 'RS256') {
    const pem = opts.privateKeyPem ?? await readOrCreateRsaKey(opts.dataDir);
    return rs256Keys(pem);
  }
  throw new Error(`unsupported site JWT algorithm: ${String(opts.alg)}`);
}

function deriveHs256Keys(masterKey: Buffer): Hs256Keys {
  if (masterKey.length !== 32) throw new Error('master key must be 32 bytes');
  // RFC 5869 §3.1: the salt may be empty when the input key is already uniformly random, as the
  // master key is; `info` binds the output to this one use so no other derived key equals it.
  const secret = createSecretKey(Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), HS256_INFO, 32)));
  return {
    alg: 'HS256',
    kid: undefined,
    signingKey: secret,
    verificationKey: secret,
    jwks: () => ({ keys: [] }),
  };
}

async function rs256Keys(pem: string): Promise<Rs256Keys> {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (cause) {
    throw new Error('site JWT RS256 key is not a readable private key PEM', { cause });
  }
  const modulusLength = privateKey.asymmetricKeyDetails?.modulusLength ?? 0;
  // Checked here rather than on first use: jose refuses smaller keys at sign time, which would turn
  // a configuration mistake into a failing token endpoint.
  if (privateKey.asymmetricKeyType !== 'rsa' || modulusLength < 2048) {
    throw new Error('site JWT RS256 key must be an RSA key of at least 2048 bits');
  }
  const publicKey = createPublicKey(privateKey);
  const publicJwk = publicKey.export({ format: 'jwk' }) as JWK;
  const kid = await calculateJwkThumbprint({ kty: publicJwk.kty, n: publicJwk.n, e: publicJwk.e }, 'sha256');
  return {
    alg: 'RS256',
    kid,
    signingKey: privateKey,
    verificationKey: publicKey,
    jwks: () => ({ keys: [{ kty: 'RSA', n: publicJwk.n, e: publicJwk.e, kid, alg: 'RS256', use: 'sig' }] }),
  };
}

const generateRsaKeyPair = promisify(generateKeyPair);

async function readOrCreateRsaKey(dataDir: string): Promise<string> {
  const path = join(dataDir, RS256_KEY_FILE);
  const existing = await readIfExists(path);
  if (existing !== undefined) return existing;

  makePrivateDir(dataDir);
  const { privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });

  // Written in full to a private temp file first, so no reader ever sees half a key.
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temp, 'wx', PRIVATE_FILE_MODE);
  try {
    await handle.writeFile(privateKey);
    await handle.sync();
  } finally {
    await handle.close();
  }
  let published: boolean;
  try {
    published = await publishWithoutClobbering(temp, path);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
  if (published) return privateKey;
  const winner = await readIfExists(path);
  if (winner === undefined) throw new Error(`site JWT key file ${path} vanished while being created`);
  return winner;
}

/** Makes `temp` visible as `path` unless `path` exists; false when another process got there first. */
async function publishWithoutClobbering(temp: string, path: string): Promise<boolean> {
  try {
    // link() fails with EEXIST instead of replacing: when two processes start together the first
    // key published wins and the other reads it, so both sign with the same key.
    await link(temp, path);
    return true;
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return false;
    if (!['EPERM', 'ENOTSUP', 'ENOSYS'].some((code) => isErrno(error, code))) throw error;
  }
  // A file system without hard links: rename is atomic too, but it replaces, so the no-clobber
  // guarantee narrows to the window between this check and the rename.
  if (await readIfExists(path) !== undefined) return false;
  await rename(temp, path);
  return true;
}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
