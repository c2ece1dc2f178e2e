/** Single logout messages, and the persistent NameID. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { SAML } from '@node-saml/node-saml';
import { readPostBinding, readRedirectBinding, redirectBindingUrl } from '../../../../src/identity/saml/bindings.ts';
import { buildLogoutResponse, parseLogoutRequest } from '../../../../src/identity/saml/logout.ts';
import { persistentNameId } from '../../../../src/identity/saml/name-id.ts';
import { verifyMessageSignature } from '../../../../src/identity/saml/signatures.ts';
import { SamlXmlError } from '../../../../src/identity/saml/xml.ts';
import { newSigning } from './helpers.ts';

const idp = await newSigning('Latchkey acme');
const spSigning = await newSigning('sp');
const stranger = await newSigning('stranger');
const ISSUER = 'https://id.example.test/customers/acme';
const SLO = 'https://sp.example.test/slo';
const serviceProvider = () => new SAML({
  idpCert: idp.certificatePem, idpIssuer: ISSUER, issuer: 'https://sp.example.test/metadata', callbackUrl: 'https://sp.example.test/acs',
  entryPoint: `${ISSUER}/saml/sso`, logoutUrl: `${ISSUER}/saml/slo`, logoutCallbackUrl: SLO,
  privateKey: spSigning.privateKeyPem, signatureAlgorithm: 'sha256', digestAlgorithm: 'sha256',
});
const profile = { issuer: ISSUER, nameID: 'ann@example.test', nameIDFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', sessionIndex: '_session1' };

test('node-saml\'s signed LogoutRequest (Redirect binding) is read and verified; the LogoutResponse by Redirect and by POST satisfies node-saml', async () => {
  const sp = serviceProvider();
  const url = await sp.getLogoutUrlAsync(profile, 'after logout', {});
  const message = readRedirectBinding(url.slice(url.indexOf('?') + 1), 'SAMLRequest');
  assert.equal(message.relayState, 'after logout');
  assert.equal(verifyMessageSignature(message, spSigning.certificatePem), true);
  assert.equal(verifyMessageSignature(message, stranger.certificatePem), false);
  const request = parseLogoutRequest(message.xml);
  assert.equal(request.issuer, 'https://sp.example.test/metadata');
  assert.equal(request.nameId, 'ann@example.test');
  assert.deepEqual(request.sessionIndexes, ['_session1']);
  assert.equal(request.destination, `${ISSUER}/saml/slo`);
  assert.match(request.id, /^_/);

  const unsigned = buildLogoutResponse({ issuer: ISSUER, destination: SLO, inResponseTo: request.id, now: Date.now() });
  assert.ok(!unsigned.includes('Signature'));
  const responseUrl = redirectBindingUrl(SLO, 'SAMLResponse', unsigned, message.relayState, idp);
  const query = new URL(responseUrl).searchParams;
  const redirect = await sp.validateRedirectAsync(Object.fromEntries(query), responseUrl.slice(responseUrl.indexOf('?') + 1));
  assert.equal(redirect.loggedOut, true);
  // Signed by another key, node-saml refuses it.
  const forgedUrl = redirectBindingUrl(SLO, 'SAMLResponse', unsigned, undefined, stranger);
  await assert.rejects(sp.validateRedirectAsync(Object.fromEntries(new URL(forgedUrl).searchParams), forgedUrl.slice(forgedUrl.indexOf('?') + 1)));

  const signed = buildLogoutResponse({ issuer: ISSUER, destination: SLO, inResponseTo: request.id, now: Date.now(), signing: idp });
  assert.equal((await sp.validatePostResponseAsync({ SAMLResponse: Buffer.from(signed).toString('base64') })).loggedOut, true);
  assert.equal(verifyMessageSignature(readPostBinding({ SAMLResponse: Buffer.from(signed).toString('base64') }, 'SAMLResponse'), idp.certificatePem), true);
  const tampered = signed.replace(`InResponseTo="${request.id}"`, 'InResponseTo="_other"');
  await assert.rejects(sp.validatePostResponseAsync({ SAMLResponse: Buffer.from(tampered).toString('base64') }));
});

test('buildLogoutResponse: Destination, InResponseTo, Issuer and the status given', () => {
  const xml = buildLogoutResponse({ issuer: ISSUER, destination: SLO, inResponseTo: '_req9', now: Date.parse('2026-11-27T10:00:00Z'), status: 'Requester' });
  assert.match(xml, /^<samlp:LogoutResponse [^>]*ID="_[0-9a-f]{40}"/);
  for (const part of [' Version="2.0"', ' IssueInstant="2026-11-27T10:00:00Z"', ` Destination="${SLO}"`, ' InResponseTo="_req9"',
    `<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${ISSUER}</saml:Issuer>`,
    '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Requester"/></samlp:Status>']) {
    assert.ok(xml.includes(part), part);
  }
});

test('parseLogoutRequest refuses a wrong root, two Issuers, two NameIDs, no ID, an empty SessionIndex, a DOCTYPE', () => {
  const request = (body = '<saml:Issuer>https://sp.example.test/metadata</saml:Issuer><saml:NameID>ann</saml:NameID><samlp:SessionIndex>_s1</samlp:SessionIndex><samlp:SessionIndex>_s2</samlp:SessionIndex>', id = ' ID="_lr1"') =>
    `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"${id} Version="2.0" IssueInstant="2026-11-27T10:00:00Z">${body}</samlp:LogoutRequest>`;
  assert.deepEqual(parseLogoutRequest(request()), {
    id: '_lr1', issuer: 'https://sp.example.test/metadata', issueInstant: Date.parse('2026-11-27T10:00:00Z'), destination: undefined, nameId: 'ann', sessionIndexes: ['_s1', '_s2'],
  });
  assert.equal(parseLogoutRequest(request('<saml:Issuer>https://sp.example.test/metadata</saml:Issuer>')).nameId, undefined);
  const refused: Record<string, string> = {
    'an AuthnRequest': request().replace(/LogoutRequest/g, 'AuthnRequest'),
    'two Issuers': request('<saml:Issuer>a</saml:Issuer><saml:Issuer>b</saml:Issuer>'),
    'two NameIDs': request('<saml:Issuer>a</saml:Issuer><saml:NameID>ann</saml:NameID><saml:NameID>bob</saml:NameID>'),
    'no ID': request(undefined, ''),
    'an empty SessionIndex': request('<saml:Issuer>a</saml:Issuer><samlp:SessionIndex> </samlp:SessionIndex>'),
    'a DOCTYPE': `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${request('<saml:Issuer>&e;</saml:Issuer>')}`,
  };
  for (const [what, xml] of Object.entries(refused)) assert.throws(() => parseLogoutRequest(xml), SamlXmlError, what);
});

test('persistentNameId: stable per user and application, different across applications, users and secrets', () => {
  const secret = randomBytes(32);
  const app = '0b6e2a1c-6f0e-4c1e-9d7a-3f1f4a2b5c6d';
  const value = persistentNameId(secret, app, 42);
  assert.equal(persistentNameId(secret, app, 42), value);
  assert.match(value, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(persistentNameId(secret, '1c2d3e4f-0000-4000-8000-000000000000', 42), value);
  assert.notEqual(persistentNameId(secret, app, 43), value);
  assert.notEqual(persistentNameId(randomBytes(32), app, 42), value);
});
