/**
 * SAML's two HTTP bindings (SAML bindings §3.4 HTTP-Redirect, §3.5 HTTP-POST): getting the XML and
 * RelayState out of a request, and building an outgoing Redirect-binding URL signed in its query.
 * Nothing here trusts the message: the XML still goes through parseSamlXml, the signature through
 * signatures.ts.
 */
import { createSign } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { SamlSigning } from './certificate.ts';
import { MAX_XML_BYTES, SamlXmlError } from './xml.ts';
import { RSA_SHA256 } from './xml-signing.ts';

export type SamlBinding = 'redirect' | 'post';

/**
 * The bindings say RelayState SHOULD NOT exceed 80 bytes, but common service providers send longer
 * ones (a return URL); 1024 bytes takes those and still bounds what is echoed back.
 */
export const MAX_RELAY_STATE_BYTES = 1024;

export interface IncomingSamlMessage {
  binding: SamlBinding;
  /** The decoded XML (Redirect: base64 + raw DEFLATE, inflated size-bounded; POST: base64). */
  xml: string;
  relayState: string | undefined;
  /** Redirect only, when the query carries Signature and SigAlg: what was signed (SAML bindings §3.4.4.1, the raw URL-encoded parameters in order). */
  redirectSignature?: { signedOctets: string; sigAlg: string; signature: Buffer };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** A message's base64 is at most that of MAX_XML_BYTES (deflating only makes it smaller). */
const MAX_MESSAGE_BASE64_CHARS = Math.ceil(MAX_XML_BYTES / 3) * 4;
/** Room for an RSA signature of up to 8192 bits. */
const MAX_SIGNATURE_BASE64_CHARS = 1368;

/**
 * @param rawQuery the request URL's query string exactly as received (no decoding/re-encoding).
 * @throws SamlXmlError
 */
export function readRedirectBinding(rawQuery: string, parameter: 'SAMLRequest' | 'SAMLResponse'): IncomingSamlMessage {
  // The signature covers the parameters as the sender encoded them, so they are kept raw until signedOctets is built.
  const raw = new Map<string, string>();
  for (const pair of rawQuery.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    const name = decodeComponent(equals === -1 ? pair : pair.slice(0, equals));
    if (![parameter, 'RelayState', 'SigAlg', 'Signature'].includes(name)) continue;
    if (raw.has(name)) throw new SamlXmlError(`The query gives ${name} more than once.`);
    raw.set(name, equals === -1 ? '' : pair.slice(equals + 1));
  }
  const message = raw.get(parameter);
  if (message === undefined || message === '') throw new SamlXmlError(`The query has no ${parameter}.`);
  const relayState = raw.get('RelayState') ? checkedRelayState(decodeComponent(raw.get('RelayState')!)) : undefined;
  const xml = inflate(strictBase64(decodeComponent(message), MAX_MESSAGE_BASE64_CHARS));

  const rawSigAlg = raw.get('SigAlg');
  const rawSignature = raw.get('Signature');
  if (rawSigAlg === undefined && rawSignature === undefined) return { binding: 'redirect', xml, relayState };
  if (rawSigAlg === undefined || rawSignature === undefined) throw new SamlXmlError('The query has a Signature without SigAlg, or the reverse.');
  const signedOctets = [`${parameter}=${message}`, ...(raw.has('RelayState') ? [`RelayState=${raw.get('RelayState')}`] : []), `SigAlg=${rawSigAlg}`].join('&');
  return {
    binding: 'redirect',
    xml,
    relayState,
    redirectSignature: { signedOctets, sigAlg: decodeComponent(rawSigAlg), signature: strictBase64(decodeComponent(rawSignature), MAX_SIGNATURE_BASE64_CHARS) },
  };
}

/** @throws SamlXmlError */
export function readPostBinding(body: Record<string, unknown>, parameter: 'SAMLRequest' | 'SAMLResponse'): IncomingSamlMessage {
  const message = body[parameter];
  if (Array.isArray(message)) throw new SamlXmlError(`The form gives ${parameter} more than once.`);
  if (typeof message !== 'string' || message === '') throw new SamlXmlError(`The form has no ${parameter}.`);
  const relayState = body.RelayState;
  if (relayState !== undefined && typeof relayState !== 'string') throw new SamlXmlError('The form gives RelayState more than once.');
  // Line breaks are allowed: some service providers wrap the base64 at 76 characters.
  const decoded = strictBase64(message.replace(/[\r\n]/g, ''), MAX_MESSAGE_BASE64_CHARS);
  // The binding sends plain base64, but some service providers (node-saml by default) deflate it as
  // for the Redirect binding: what does not start as XML is inflated, with the same bound.
  const xml = /^(\uFEFF)?\s*</.test(decoded.subarray(0, 64).toString('utf8')) ? decoded.toString('utf8') : inflate(decoded);
  return { binding: 'post', xml, relayState: relayState === undefined || relayState === '' ? undefined : checkedRelayState(relayState) };
}

/** An auto-submit-free value: the URL of an outgoing Redirect-binding message, deflated, base64, signed with RSA-SHA256 in the query. */
export function redirectBindingUrl(target: string, parameter: 'SAMLRequest' | 'SAMLResponse', xml: string, relayState: string | undefined, signing: SamlSigning): string {
  const query = [`${parameter}=${encodeURIComponent(deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'))}`];
  if (relayState !== undefined) query.push(`RelayState=${encodeURIComponent(relayState)}`);
  query.push(`SigAlg=${encodeURIComponent(RSA_SHA256)}`);
  const signature = createSign('sha256').update(query.join('&')).sign(signing.privateKeyPem).toString('base64');
  query.push(`Signature=${encodeURIComponent(signature)}`);
  return `${target}${target.includes('?') ? '&' : '?'}${query.join('&')}`;
}

function decodeComponent(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new SamlXmlError('The query is not properly URL-encoded.');
  }
}

function strictBase64(text: string, maxLength: number): Buffer {
  if (text.length > maxLength) throw new SamlXmlError('The SAML message is too large.');
  if (text.length % 4 !== 0 || !BASE64.test(text)) throw new SamlXmlError('The SAML message is not base64.');
  return Buffer.from(text, 'base64');
}

function inflate(deflated: Buffer): string {
  try {
    // maxOutputLength stops a small deflate bomb before it fills memory.
    return inflateRawSync(deflated, { maxOutputLength: MAX_XML_BYTES }).toString('utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new SamlXmlError('The SAML message is too large.');
    throw new SamlXmlError('The SAML message is not DEFLATE-compressed.');
  }
}

function checkedRelayState(relayState: string): string {
  if (Buffer.byteLength(relayState, 'utf8') > MAX_RELAY_STATE_BYTES) throw new SamlXmlError(`RelayState is longer than ${MAX_RELAY_STATE_BYTES} bytes.`);
  return relayState;
}
