/**
 * The signed Response: a real service provider library (node-saml) configured only from Latchkey's
 * metadata accepts it, xmlsec1 verifies both signatures with the metadata's certificate, and one changed
 * byte makes both refuse it.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import { parseAuthnRequest } from '../../../../src/identity/saml/authn-request.ts';
import { readRedirectBinding } from '../../../../src/identity/saml/bindings.ts';
import { idpMetadataXml } from '../../../../src/identity/saml/idp-metadata.ts';
import { buildSignedResponse, type ResponseInput } from '../../../../src/identity/saml/response.ts';
import { newSigning } from './helpers.ts';

const run = promisify(execFile);
const idp = await newSigning('Latchkey acme');
const stranger = await newSigning('stranger');
const ISSUER = 'https://id.example.test/customers/acme';
const ENTITY_ID = 'https://sp.example.test/metadata';
const ACS = 'https://sp.example.test/acs';

/** The certificate as an SP reads it from the metadata: the X509Certificate element's body. */
const metadataCertificate = /<ds:X509Certificate>([^<]+)<\/ds:X509Certificate>/.exec(idpMetadataXml({ issuer: ISSUER, certificatePem: idp.certificatePem }))![1]!;

function serviceProvider(idpCert = metadataCertificate) {
  return new SAML({
    idpCert, idpIssuer: ISSUER, issuer: ENTITY_ID, callbackUrl: ACS, audience: ENTITY_ID, entryPoint: `${ISSUER}/saml/sso`,
    wantAssertionsSigned: true, wantAuthnResponseSigned: true, validateInResponseTo: ValidateInResponseTo.always,
  });
}

function input(overrides: Partial<ResponseInput> = {}): ResponseInput {
  const now = Date.now();
  return {
    issuer: ISSUER, destination: ACS, inResponseTo: undefined, audience: ENTITY_ID,
    nameId: { format: 'emailAddress', value: 'ann@example.test' }, sessionIndex: '_session1', authnInstant: now - 5_000, now,
    attributes: { email: 'ann@example.test', username: 'ann', firstName: 'Ann <&>', lastName: 'Lee', groups: ['staff', 'ops & dev'] },
    signing: idp, ...overrides,
  };
}

const base64 = (xml: string) => Buffer.from(xml).toString('base64');
/** One byte of an attribute value changed: "ann" becomes "anm". */
const tampered = (xml: string) => xml.replace('<saml:AttributeValue>ann</saml:AttributeValue>', '<saml:AttributeValue>anm</saml:AttributeValue>');

test('node-saml, configured from the metadata, accepts the Response to its own AuthnRequest, with the NameID and every attribute', async () => {
  const sp = serviceProvider();
  const url = await sp.getAuthorizeUrlAsync('', undefined, {});
  const request = parseAuthnRequest(readRedirectBinding(url.slice(url.indexOf('?') + 1), 'SAMLRequest').xml);
  const xml = buildSignedResponse(input({ inResponseTo: request.id }));
  const { profile, loggedOut } = await sp.validatePostResponseAsync({ SAMLResponse: base64(xml) });
  assert.equal(loggedOut, false);
  assert.equal(profile!.issuer, ISSUER);
  assert.equal(profile!.nameID, 'ann@example.test');
  assert.equal(profile!.nameIDFormat, 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');
  assert.equal(profile!.sessionIndex, '_session1');
  assert.equal(profile!.inResponseTo, request.id);
  assert.equal(profile!.email, 'ann@example.test');
  assert.equal(profile!.username, 'ann');
  assert.equal(profile!.firstName, 'Ann <&>');
  assert.equal(profile!.lastName, 'Lee');
  assert.deepEqual(profile!.groups, ['staff', 'ops & dev']);
  // Answered once: node-saml forgets the request ID it accepted.
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: base64(xml) }));
});

test('node-saml accepts an unsolicited Response (persistent NameID, one group) and refuses a changed byte, another key, another audience', async () => {
  const sp = new SAML({ idpCert: metadataCertificate, idpIssuer: ISSUER, issuer: ENTITY_ID, callbackUrl: ACS, audience: ENTITY_ID, wantAssertionsSigned: true, wantAuthnResponseSigned: true });
  const xml = buildSignedResponse(input({ nameId: { format: 'persistent', value: 'opaque-id' }, attributes: { ...input().attributes, groups: ['staff'] } }));
  const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: base64(xml) });
  assert.equal(profile!.nameID, 'opaque-id');
  assert.equal(profile!.nameIDFormat, 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
  assert.equal(profile!.groups, 'staff');
  assert.notEqual(tampered(xml), xml);
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: base64(tampered(xml)) }), /signature/i);
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: base64(buildSignedResponse(input({ signing: stranger }))) }), /signature/i);
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: base64(buildSignedResponse(input({ audience: 'https://other.example.test' }))) }), /audience/i);
  // Expired: five minutes and a bit later.
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: base64(buildSignedResponse(input({ now: Date.now() - 5 * 60_000 - 2_000 }))) }));
});

test('the Response carries what DESIGN.md lists, with the five-minute windows', () => {
  const now = Date.parse('2026-11-27T10:00:00.700Z');
  const xml = buildSignedResponse(input({ now, inResponseTo: '_req1', authnInstant: Date.parse('2026-11-27T09:58:00Z'), nameId: { format: 'unspecified', value: 'ann' } }));
  for (const expected of [
    /^<samlp:Response [^>]*ID="_[0-9a-f]{40}"/, / Version="2.0"/, / IssueInstant="2026-11-27T10:00:00Z"/, ` Destination="${ACS}"`, ' InResponseTo="_req1"',
    '<samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/>', `<saml:Issuer>${ISSUER}</saml:Issuer>`,
    '<saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified">ann</saml:NameID>',
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData InResponseTo="_req1" NotOnOrAfter="2026-11-27T10:05:00Z" Recipient="${ACS}"/>`,
    `<saml:Conditions NotBefore="2026-11-27T09:59:00Z" NotOnOrAfter="2026-11-27T10:05:00Z"><saml:AudienceRestriction><saml:Audience>${ENTITY_ID}</saml:Audience>`,
    '<saml:AuthnStatement AuthnInstant="2026-11-27T09:58:00Z" SessionIndex="_session1">',
    '<saml:Attribute Name="groups" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic"><saml:AttributeValue>staff</saml:AttributeValue><saml:AttributeValue>ops &amp; dev</saml:AttributeValue></saml:Attribute>',
    /<saml:Assertion ID="_[0-9a-f]{40}" Version="2.0" IssueInstant="2026-11-27T10:00:00Z"><saml:Issuer>[^<]+<\/saml:Issuer><ds:Signature /,
    /<\/saml:Issuer><ds:Signature [\s\S]*<samlp:Status>/,
  ]) {
    if (typeof expected === 'string') assert.ok(xml.includes(expected), expected);
    else assert.match(xml, expected);
  }
  assert.equal(xml.match(/<saml:Assertion /g)!.length, 1);
  assert.equal(xml.match(/SignatureMethod Algorithm="http:\/\/www.w3.org\/2001\/04\/xmldsig-more#rsa-sha256"/g)!.length, 2);
  assert.equal(xml.match(/CanonicalizationMethod Algorithm="http:\/\/www.w3.org\/2001\/10\/xml-exc-c14n#"/g)!.length, 2);
  // Unsolicited: no InResponseTo anywhere.
  assert.ok(!buildSignedResponse(input()).includes('InResponseTo'));
});

test('xmlsec1 verifies the Response\'s and the Assertion\'s signatures with the metadata\'s certificate, and refuses a changed byte or another certificate', async (t) => {
  if (!(await hasXmlsec1())) {
    if (process.env.CI === 'true') throw new Error('CI must have xmlsec1 (Debian package xmlsec1; .ci/run installs it)');
    t.skip('xmlsec1 is not installed');
    return;
  }
  const folder = await mkdtemp(join(tmpdir(), 'latchkey-xmlsec-'));
  t.after(() => rm(folder, { recursive: true, force: true }));
  const certificate = join(folder, 'idp.pem');
  await writeFile(certificate, `-----BEGIN CERTIFICATE-----\n${metadataCertificate.replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`);
  const strangerCertificate = join(folder, 'stranger.pem');
  await writeFile(strangerCertificate, stranger.certificatePem);
  let files = 0;
  async function verifies(xml: string, signature: 'Response' | 'Assertion', pem = certificate): Promise<boolean> {
    const file = join(folder, `${files++}.xml`);
    await writeFile(file, xml);
    const args = ['--verify', '--pubkey-cert-pem', pem,
      '--id-attr:ID', 'urn:oasis:names:tc:SAML:2.0:protocol:Response', '--id-attr:ID', 'urn:oasis:names:tc:SAML:2.0:assertion:Assertion',
      // xmlsec1 checks one signature: the Response's, or the one inside the Assertion.
      '--node-xpath', signature === 'Response' ? "/*/*[local-name()='Signature']" : "/*/*[local-name()='Assertion']/*[local-name()='Signature']",
      file];
    try {
      await run('xmlsec1', args);
      return true;
    } catch {
      return false;
    }
  }
  const xml = buildSignedResponse(input({ inResponseTo: '_req1' }));
  assert.equal(await verifies(xml, 'Response'), true);
  assert.equal(await verifies(xml, 'Assertion'), true);
  assert.equal(await verifies(tampered(xml), 'Response'), false);
  assert.equal(await verifies(tampered(xml), 'Assertion'), false);
  assert.equal(await verifies(xml, 'Response', strangerCertificate), false);
  assert.equal(await verifies(xml, 'Assertion', strangerCertificate), false);
  // The two are checked apart: a change outside the Assertion breaks only the Response's signature.
  const outside = xml.replace(`Destination="${ACS}"`, 'Destination="https://evil.example.test/acs"');
  assert.equal(await verifies(outside, 'Response'), false);
  assert.equal(await verifies(outside, 'Assertion'), true);
});

async function hasXmlsec1(): Promise<boolean> {
  try {
    await run('xmlsec1', ['--version']);
    return true;
  } catch {
    return false;
  }
}
