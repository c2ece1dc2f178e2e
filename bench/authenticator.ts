/**
 * A software passkey authenticator for the bench: an ES256 key pair per credential (node:crypto), and
 * the WebAuthn structures a platform authenticator and its browser hand the page (WebAuthn Level 3
 * §6.1 authenticator data, §5.8.1 client data, §6.5.4 attestation "none", §6.3.3 the assertion's
 * signature over authenticatorData ‖ SHA-256(clientDataJSON)), as @simplewebauthn/browser returns them.
 * User presence and user verification are always claimed; the signature counter moves on every assertion.
 */
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { isoCBOR } from '@simplewebauthn/server/helpers';

export interface SoftwareCredential {
  /** The credential ID, base64url. */
  id: string;
  /** The WebAuthn user handle the registration named, base64url. */
  userHandle: string;
  privateKey: KeyObject;
  /** The signature counter of the last assertion (0 at registration). */
  counter: number;
}

// §6.1 flags: user present, user verified, attested credential data included.
const UP = 0x01;
const UV = 0x04;
const AT = 0x40;

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();

function authenticatorData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
  const head = Buffer.alloc(37);
  sha256(rpId).copy(head, 0);
  head[32] = flags;
  head.writeUInt32BE(counter, 33);
  return attested ? Buffer.concat([head, attested]) : head;
}

function clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin: string): Buffer {
  return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
}

/** The public key as COSE_Key (RFC 9053 §7.1.1, EC2 P-256, alg ES256): what the attested credential data carries. */
function coseKey(publicKey: KeyObject): Uint8Array {
  const jwk = publicKey.export({ format: 'jwk' });
  return isoCBOR.encode(new Map<number, number | Uint8Array>([
    [1, 2], [3, -7], [-1, 1],
    [-2, Buffer.from(jwk.x!, 'base64url')],
    [-3, Buffer.from(jwk.y!, 'base64url')],
  ]));
}

/** A new discoverable credential for `options` (navigator.credentials.create), attestation "none". */
export function createCredential(options: PublicKeyCredentialCreationOptionsJSON, origin: string): { credential: SoftwareCredential; response: RegistrationResponseJSON } {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const rawId = randomBytes(16);
  const cose = coseKey(publicKey);
  const attested = Buffer.alloc(16 + 2 + rawId.length);
  // An all-zero AAGUID: what an authenticator that does not say what it is sends with "none".
  attested.writeUInt16BE(rawId.length, 16);
  rawId.copy(attested, 18);
  const authData = authenticatorData(options.rp.id ?? new URL(origin).hostname, UP | UV | AT, 0, Buffer.concat([attested, cose]));
  const attestationObject = isoCBOR.encode(new Map<string, string | Uint8Array | Map<string, string>>([
    ['fmt', 'none'], ['attStmt', new Map<string, string>()], ['authData', authData],
  ]));
  const id = rawId.toString('base64url');
  return {
    credential: { id, userHandle: options.user.id, privateKey, counter: 0 },
    response: {
      id,
      rawId: id,
      type: 'public-key',
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
      response: {
        clientDataJSON: clientData('webauthn.create', options.challenge, origin).toString('base64url'),
        attestationObject: Buffer.from(attestationObject).toString('base64url'),
        transports: ['internal'],
      },
    },
  };
}

/** The assertion for `options` (navigator.credentials.get) by `credential`; moves its counter. */
export function assertion(credential: SoftwareCredential, options: PublicKeyCredentialRequestOptionsJSON, origin: string): AuthenticationResponseJSON {
  credential.counter++;
  const authData = authenticatorData(options.rpId ?? new URL(origin).hostname, UP | UV, credential.counter);
  const clientDataJSON = clientData('webauthn.get', options.challenge, origin);
  // ES256: ECDSA P-256 over SHA-256, the signature DER-encoded (§6.5.5), node:crypto's default for EC keys.
  const signature = sign('sha256', Buffer.concat([authData, sha256(clientDataJSON)]), credential.privateKey);
  return {
    id: credential.id,
    rawId: credential.id,
    type: 'public-key',
    authenticatorAttachment: 'platform',
    clientExtensionResults: {},
    response: {
      clientDataJSON: clientDataJSON.toString('base64url'),
      authenticatorData: authData.toString('base64url'),
      signature: signature.toString('base64url'),
      userHandle: credential.userHandle,
    },
  };
}
