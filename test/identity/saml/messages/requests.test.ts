/**
 * Incoming requests: both bindings decoded within bounds, AuthnRequests parsed strictly, and signatures
 * accepted only from the registered certificate, in the one shape that cannot be wrapped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { SAML } from '@node-saml/node-saml';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { parseAuthnRequest } from '../../../../src/identity/saml/authn-request.ts';
import { readPostBinding, readRedirectBinding, redirectBindingUrl } from '../../../../src/identity/saml/bindings.ts';
import { isSigned, verifyMessageSignature } from '../../../../src/identity/saml/signatures.ts';
import { SamlXmlError } from '../../../../src/identity/saml/xml.ts';
import { formValue, newSigning } from './helpers.ts';

const sp = await newSigning('sp');
const stranger = await newSigning('stranger');
const SP = { issuer: 'https://sp.example.test/metadata', callbackUrl: 'https://sp.example.test/acs', entryPoint: 'https://id.example.test/acme/saml/sso', idpCert: stranger.certificatePem };
const signingSp = (extra: Record<string, unknown> = {}) => new SAML({ ...SP, privateKey: sp.privateKeyPem, signatureAlgorithm: 'sha256', digestAlgorithm: 'sha256', ...extra });
const rawQuery = (url: string) => url.slice(url.indexOf('?') + 1);
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

async function signedPostXml(): Promise<string> {
  const form = await signingSp({ authnRequestBinding: 'HTTP-POST', skipRequestCompression: true }).getAuthorizeFormAsync('');
  return Buffer.from(formValue(form, 'SAMLRequest'), 'base64').toString('utf8');
}
const post = (xml: string) => readPostBinding({ SAMLRequest: Buffer.from(xml).toString('base64') }, 'SAMLRequest');

/** Signs `xml` the way a service provider might, with xml-crypto: the reference and algorithms are the test's to choose. */
function spSign(xml: string, options: { xpath?: string; signatureAlgorithm?: string; digestAlgorithm?: string } = {}): string {
  const signer = new SignedXml({
    privateKey: sp.privateKeyPem,
    signatureAlgorithm: options.signatureAlgorithm ?? 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: EXC_C14N,
  });
  signer.addReference({ xpath: options.xpath ?? '/*', transforms: [ENVELOPED, EXC_C14N], digestAlgorithm: options.digestAlgorithm ?? 'http://www.w3.org/2001/04/xmlenc#sha256' });
  signer.computeSignature(xml, { location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' } });
  return signer.getSignedXml();
}

const request = (attributes = '', body = '<saml:Issuer>https://sp.example.test/metadata</saml:Issuer>') =>
  '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" '
  + `ID="_req1" Version="2.0" IssueInstant="2026-11-27T10:00:00.123Z" AssertionConsumerServiceURL="https://sp.example.test/acs"${attributes}>${body}</samlp:AuthnRequest>`;

test('Redirect binding: node-saml\'s signed AuthnRequest decodes, parses and verifies with the SP\'s certificate only; a changed query does not', async () => {
  const url = await signingSp().getAuthorizeUrlAsync('back to/page?x=1', undefined, {});
  const message = readRedirectBinding(rawQuery(url), 'SAMLRequest');
  assert.equal(message.binding, 'redirect');
  assert.equal(message.relayState, 'back to/page?x=1');
  const parsed = parseAuthnRequest(message.xml);
  assert.equal(parsed.issuer, SP.issuer);
  assert.equal(parsed.acsUrl, SP.callbackUrl);
  assert.equal(parsed.destination, SP.entryPoint);
  assert.match(parsed.id, /^_[0-9a-f]+$/);
  assert.ok(Math.abs(parsed.issueInstant - Date.now()) < 60_000);
  assert.equal(parsed.forceAuthn, false);
  assert.equal(parsed.isPassive, false);
  assert.ok(isSigned(message));
  assert.equal(verifyMessageSignature(message, sp.certificatePem), true);
  assert.equal(verifyMessageSignature(message, stranger.certificatePem), false);
  const tampered = rawQuery(url).replace('RelayState=back', 'RelayState=evil');
  assert.equal(verifyMessageSignature(readRedirectBinding(tampered, 'SAMLRequest'), sp.certificatePem), false);
  // An SP that signs with RSA-SHA1 is refused even when the signature itself is good.
  const sha1 = await signingSp({ signatureAlgorithm: 'sha1' }).getAuthorizeUrlAsync('', undefined, {});
  assert.equal(verifyMessageSignature(readRedirectBinding(rawQuery(sha1), 'SAMLRequest'), sp.certificatePem), false);
  // Unsigned: not signed, and not verified.
  const unsigned = readRedirectBinding(rawQuery(await new SAML(SP).getAuthorizeUrlAsync('', undefined, {})), 'SAMLRequest');
  assert.equal(isSigned(unsigned), false);
  assert.equal(unsigned.relayState, undefined);
  assert.equal(verifyMessageSignature(unsigned, sp.certificatePem), false);
});

test('redirectBindingUrl: what it signs, readRedirectBinding reads back and the certificate verifies', async () => {
  const xml = request();
  const url = redirectBindingUrl('https://sp.example.test/slo?tenant=1', 'SAMLResponse', xml, 'state & more', sp);
  assert.ok(url.startsWith('https://sp.example.test/slo?tenant=1&SAMLResponse='));
  const message = readRedirectBinding(rawQuery(url), 'SAMLResponse');
  assert.equal(message.xml, xml);
  assert.equal(message.relayState, 'state & more');
  assert.equal(verifyMessageSignature(message, sp.certificatePem), true);
  assert.equal(verifyMessageSignature(message, stranger.certificatePem), false);
  const withoutRelayState = readRedirectBinding(rawQuery(redirectBindingUrl('https://sp.example.test/slo', 'SAMLResponse', xml, undefined, sp)), 'SAMLResponse');
  assert.equal(withoutRelayState.relayState, undefined);
  assert.equal(verifyMessageSignature(withoutRelayState, sp.certificatePem), true);
});

test('POST binding: node-saml\'s signed AuthnRequest verifies with the SP\'s certificate only, and its deflated default form is read too', async () => {
  const form = await signingSp({ authnRequestBinding: 'HTTP-POST', skipRequestCompression: true }).getAuthorizeFormAsync('relay-1');
  const message = readPostBinding({ SAMLRequest: formValue(form, 'SAMLRequest'), RelayState: formValue(form, 'RelayState') }, 'SAMLRequest');
  assert.equal(message.binding, 'post');
  assert.equal(message.relayState, 'relay-1');
  assert.equal(parseAuthnRequest(message.xml).issuer, SP.issuer);
  assert.ok(isSigned(message));
  assert.equal(verifyMessageSignature(message, sp.certificatePem), true);
  assert.equal(verifyMessageSignature(message, stranger.certificatePem), false);
  const deflated = await signingSp({ authnRequestBinding: 'HTTP-POST' }).getAuthorizeFormAsync('');
  const inflated = readPostBinding({ SAMLRequest: formValue(deflated, 'SAMLRequest') }, 'SAMLRequest');
  assert.equal(parseAuthnRequest(inflated.xml).acsUrl, SP.callbackUrl);
  assert.equal(verifyMessageSignature(inflated, sp.certificatePem), true);
  // Base64 wrapped at 76 characters, as some SPs send it.
  const wrapped = Buffer.from(message.xml).toString('base64').replace(/(.{76})/g, '$1\r\n');
  assert.equal(verifyMessageSignature(readPostBinding({ SAMLRequest: wrapped }, 'SAMLRequest'), sp.certificatePem), true);
  const unsigned = post(request());
  assert.equal(isSigned(unsigned), false);
  assert.equal(verifyMessageSignature(unsigned, sp.certificatePem), false);
});

test('POST signatures: a changed message, wrapping, a moved signature, a reference elsewhere, a duplicated ID and SHA-1 are all refused', async () => {
  const signed = await signedPostXml();
  const id = /ID="([^"]+)"/.exec(signed)![1]!;
  const signature = /<Signature[\s\S]*<\/Signature>/.exec(signed)![0];
  const withoutSignature = signed.replace(signature, '').replace(/^<\?xml[^>]*>/, '');
  const open = '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" Version="2.0" IssueInstant="2026-11-27T10:00:00Z" AssertionConsumerServiceURL="https://evil.example.test/acs"';
  const issuer = '<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">https://sp.example.test/metadata</saml:Issuer>';
  const verified = (xml: string) => verifyMessageSignature(post(xml), sp.certificatePem);

  assert.equal(verified(signed), true);
  assert.equal(verified(signed.replace('https://sp.example.test/acs', 'https://evil.example.test/acs')), false, 'a changed ACS URL');

  // XSW: the evil request at the root carries the genuine signature, whose reference finds the genuine request inside Extensions.
  const wrapped = `${open} ID="_evil">${issuer}${signature}<samlp:Extensions>${withoutSignature}</samlp:Extensions></samlp:AuthnRequest>`;
  assert.equal(xmlCryptoAlone(wrapped), true, 'the attack is real: xml-crypto alone accepts it');
  assert.equal(verified(wrapped), false, 'a second AuthnRequest wrapped');
  // The same, with the evil root taking the genuine ID.
  const duplicated = `${open} ID="${id}">${issuer}${signature}<samlp:Extensions>${withoutSignature}</samlp:Extensions></samlp:AuthnRequest>`;
  assert.equal(verified(duplicated), false, 'a duplicated ID');
  // The genuine signature moved into an extension of its own request.
  const moved = signed.replace(signature, '').replace('</saml:Issuer>', `</saml:Issuer><samlp:Extensions>${signature}</samlp:Extensions>`);
  assert.equal(verified(moved), false, 'a signature in an extension');
  // A second signature besides the genuine one.
  assert.equal(verified(signed.replace('</samlp:AuthnRequest>', `<samlp:Extensions>${signature}</samlp:Extensions></samlp:AuthnRequest>`)), false, 'two signatures');

  // Signed by the SP, but over another element than the root.
  const partial = spSign(request('', '<saml:Issuer>https://sp.example.test/metadata</saml:Issuer><samlp:Extensions ID="_ext"><x xmlns="urn:x">1</x></samlp:Extensions>'),
    { xpath: "//*[local-name(.)='Extensions']" });
  assert.equal(xmlCryptoAlone(partial), true);
  assert.equal(verified(partial), false, 'a reference to another element');
  assert.equal(verified(spSign(request())), true, 'the same signer over the root');
  assert.equal(verified(spSign(request(), { signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' })), false, 'RSA-SHA1');
  assert.equal(verified(spSign(request(), { digestAlgorithm: 'http://www.w3.org/2000/09/xmldsig#sha1' })), false, 'a SHA-1 digest');
  // A KeyInfo naming another certificate changes nothing: the registered one is used.
  assert.equal(verifyMessageSignature(post(signed), stranger.certificatePem), false);
});

/** What xml-crypto says on its own about the first signature, with the SP's certificate. */
function xmlCryptoAlone(xml: string): boolean {
  const checker = new SignedXml({ publicCert: sp.certificatePem });
  const document = new DOMParser().parseFromString(xml, 'text/xml');
  checker.loadSignature(checker.findSignatures(document as unknown as Node)[0]!);
  try {
    return checker.checkSignature(xml);
  } catch {
    return false;
  }
}

test('parseAuthnRequest reads the attributes and refuses what is not a well-formed, single-issuer SAML 2.0 AuthnRequest', () => {
  const parsed = parseAuthnRequest(request(' Destination="https://id.example.test/acme/saml/sso" ForceAuthn="true" IsPassive="0" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"'));
  assert.deepEqual(parsed, {
    id: '_req1', issuer: 'https://sp.example.test/metadata', issueInstant: Date.parse('2026-11-27T10:00:00.123Z'),
    destination: 'https://id.example.test/acme/saml/sso', acsUrl: 'https://sp.example.test/acs',
    protocolBinding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', forceAuthn: true, isPassive: false,
  });
  const byIndex = parseAuthnRequest(request().replace(' AssertionConsumerServiceURL="https://sp.example.test/acs"', ' AssertionConsumerServiceIndex="2"'));
  assert.equal(byIndex.acsIndex, 2);
  assert.equal(byIndex.acsUrl, undefined);

  const refused: Record<string, string> = {
    'a DOCTYPE with an external entity': `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${request('', '<saml:Issuer>&xxe;</saml:Issuer>')}`,
    'billion laughs': `<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>${request('', '<saml:Issuer>&c;</saml:Issuer>')}`,
    'an undeclared entity': request('', '<saml:Issuer>&xxe;</saml:Issuer>'),
    'not well-formed': request().slice(0, -5),
    'another root': request().replace(/AuthnRequest/g, 'LogoutRequest'),
    'another namespace': request().replace('urn:oasis:names:tc:SAML:2.0:protocol', 'urn:evil'),
    'two Issuers': request('', '<saml:Issuer>https://sp.example.test/metadata</saml:Issuer><saml:Issuer>https://other.example.test</saml:Issuer>'),
    'no Issuer': request('', ''),
    'an empty Issuer': request('', '<saml:Issuer> </saml:Issuer>'),
    'too large': request('', `<saml:Issuer>https://sp.example.test/metadata</saml:Issuer><!--${'x'.repeat(300 * 1024)}-->`),
    'no ID': request().replace(' ID="_req1"', ''),
    'an ID that is not an NCName': request().replace('ID="_req1"', 'ID="1 or 2"'),
    'Version 1.1': request().replace('Version="2.0"', 'Version="1.1"'),
    'no IssueInstant': request().replace(/ IssueInstant="[^"]+"/, ''),
    'an IssueInstant not in UTC': request().replace('2026-11-27T10:00:00.123Z', '2026-11-27T10:00:00+01:00'),
    'an IssueInstant that is no date': request().replace('2026-11-27T10:00:00.123Z', '2026-13-45T10:00:00Z'),
    'a URL and an index': request(' AssertionConsumerServiceIndex="1"'),
    'ForceAuthn not a boolean': request(' ForceAuthn="yes"'),
  };
  for (const [what, xml] of Object.entries(refused)) {
    assert.throws(() => parseAuthnRequest(xml), SamlXmlError, what);
  }
});

test('the bindings refuse a deflate bomb, a parameter given twice, bad encodings and an overlong RelayState', () => {
  const encode = (xml: string | Buffer) => encodeURIComponent(deflateRawSync(typeof xml === 'string' ? Buffer.from(xml) : xml).toString('base64'));
  const good = `SAMLRequest=${encode(request())}`;
  assert.equal(readRedirectBinding(good, 'SAMLRequest').xml, request());
  const bomb = deflateRawSync(Buffer.alloc(50 * 1024 * 1024, ' '));
  assert.ok(bomb.length < 100 * 1024, 'the bomb is small');
  const refused: Record<string, () => unknown> = {
    'a deflate bomb': () => readRedirectBinding(`SAMLRequest=${encodeURIComponent(bomb.toString('base64'))}`, 'SAMLRequest'),
    'a deflate bomb by POST': () => readPostBinding({ SAMLRequest: bomb.toString('base64') }, 'SAMLRequest'),
    'SAMLRequest twice': () => readRedirectBinding(`${good}&${good}`, 'SAMLRequest'),
    'RelayState twice': () => readRedirectBinding(`${good}&RelayState=a&RelayState=b`, 'SAMLRequest'),
    'RelayState twice by POST': () => readPostBinding({ SAMLRequest: Buffer.from(request()).toString('base64'), RelayState: ['a', 'b'] }, 'SAMLRequest'),
    'SAMLRequest twice by POST': () => readPostBinding({ SAMLRequest: ['a', 'b'] }, 'SAMLRequest'),
    'no SAMLRequest': () => readRedirectBinding('RelayState=a', 'SAMLRequest'),
    'a SAMLResponse where a SAMLRequest is read': () => readRedirectBinding(good.replace('SAMLRequest', 'SAMLResponse'), 'SAMLRequest'),
    'a Signature without SigAlg': () => readRedirectBinding(`${good}&Signature=AAAA`, 'SAMLRequest'),
    'not base64': () => readRedirectBinding('SAMLRequest=%25%25%25', 'SAMLRequest'),
    'not base64 by POST': () => readPostBinding({ SAMLRequest: '<samlp:AuthnRequest/>' }, 'SAMLRequest'),
    'not DEFLATE': () => readRedirectBinding(`SAMLRequest=${encodeURIComponent(Buffer.from('not deflated at all').toString('base64'))}`, 'SAMLRequest'),
    'bad percent-encoding': () => readRedirectBinding(`${good}&RelayState=%E0%A4%A`, 'SAMLRequest'),
    'RelayState over 1024 bytes': () => readRedirectBinding(`${good}&RelayState=${'r'.repeat(1025)}`, 'SAMLRequest'),
    'RelayState over 1024 bytes by POST': () => readPostBinding({ SAMLRequest: Buffer.from(request()).toString('base64'), RelayState: 'é'.repeat(513) }, 'SAMLRequest'),
  };
  for (const [what, read] of Object.entries(refused)) assert.throws(read, SamlXmlError, what);
  assert.equal(readRedirectBinding(`${good}&RelayState=${'r'.repeat(1024)}`, 'SAMLRequest').relayState, 'r'.repeat(1024));
  // Other parameters (a cache buster) are ignored, not refused.
  assert.equal(readRedirectBinding(`${good}&_=123`, 'SAMLRequest').xml, request());
});
