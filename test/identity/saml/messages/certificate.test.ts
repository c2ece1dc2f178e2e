/** The customer's SAML certificate and IdP metadata: deterministic, self-verifying, over the customer's own key. */
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { selfSignedCertificate } from '../../../../src/identity/saml/certificate.ts';
import { idpMetadataXml } from '../../../../src/identity/saml/idp-metadata.ts';
import { childElements, DS, MD, parseSamlXml } from '../../../../src/identity/saml/xml.ts';
import { createSigningKeysService } from '../../../../src/identity/signing-keys/service.ts';
import { createSealer } from '../../../../src/lib/seal.ts';
import { build } from '../../../helpers/app.ts';
import { describeEachStore } from '../../../helpers/stores.ts';

async function rsaKey() {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { publicJwk: await exportJWK(publicKey), privateJwk: await exportJWK(privateKey) };
}

test('selfSignedCertificate: the same bytes twice for one key, self-signed over that key, 20 years from notBefore', async () => {
  const key = await rsaKey();
  const notBefore = new Date('2026-03-04T05:06:07Z');
  const input = { ...key, subjectCommonName: 'Latchkey acme', notBefore };
  const pem = await selfSignedCertificate(input);
  assert.equal(await selfSignedCertificate(input), pem);
  const certificate = new X509Certificate(pem);
  assert.ok(certificate.checkIssued(certificate));
  assert.ok(certificate.verify(createPublicKey({ key: key.publicJwk as never, format: 'jwk' })));
  assert.deepEqual(certificate.publicKey.export({ format: 'jwk' }), { kty: 'RSA', n: key.publicJwk.n, e: key.publicJwk.e });
  assert.equal(certificate.subject, 'CN=Latchkey acme');
  assert.equal(new Date(certificate.validFrom).toISOString(), '2026-03-04T05:06:07.000Z');
  assert.equal(new Date(certificate.validTo).toISOString(), '2046-03-04T05:06:07.000Z');
  assert.match(certificate.serialNumber, /^[4-7][0-9A-F]{31}$/);
  // Another key: another certificate that the first key does not verify.
  const other = new X509Certificate(await selfSignedCertificate({ ...(await rsaKey()), subjectCommonName: 'Latchkey acme', notBefore }));
  assert.notEqual(other.serialNumber, certificate.serialNumber);
  assert.equal(other.verify(certificate.publicKey), false);
});

test('idpMetadataXml: entity ID, signing certificate, SSO and SLO endpoints for both bindings, the three NameID formats', async () => {
  const pem = await selfSignedCertificate({ ...(await rsaKey()), subjectCommonName: 'Latchkey acme', notBefore: new Date() });
  const issuer = 'https://id.example.test/acme&co';
  const xml = idpMetadataXml({ issuer, certificatePem: pem });
  const root = parseSamlXml(xml, { namespace: MD, localNames: ['EntityDescriptor'] }).documentElement!;
  assert.equal(root.getAttribute('entityID'), issuer);
  const [idp] = childElements(root, MD, 'IDPSSODescriptor');
  assert.ok(idp);
  assert.equal(idp.getAttribute('protocolSupportEnumeration'), 'urn:oasis:names:tc:SAML:2.0:protocol');
  assert.equal(idp.getAttribute('WantAuthnRequestsSigned'), 'false');
  const [keyDescriptor] = childElements(idp, MD, 'KeyDescriptor');
  assert.equal(keyDescriptor!.getAttribute('use'), 'signing');
  const body = keyDescriptor!.getElementsByTagNameNS(DS, 'X509Certificate')[0]!.textContent!;
  assert.equal(new X509Certificate(Buffer.from(body, 'base64')).toString(), new X509Certificate(pem).toString());
  const endpoints = (name: string) => childElements(idp, MD, name).map((e) => [e.getAttribute('Binding'), e.getAttribute('Location')]);
  assert.deepEqual(endpoints('SingleSignOnService'), [
    ['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', `${issuer}/saml/sso`],
    ['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', `${issuer}/saml/sso`],
  ]);
  assert.deepEqual(endpoints('SingleLogoutService'), [
    ['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', `${issuer}/saml/slo`],
    ['urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', `${issuer}/saml/slo`],
  ]);
  assert.deepEqual(childElements(idp, MD, 'NameIDFormat').map((e) => e.textContent), [
    'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
  ]);
});

describeEachStore('SAML signing', (kind) => {
  test('samlSigning: the customer key in a certificate named after the customer, the same on two nodes, per customer', async (t) => {
    const app = await build(t, kind);
    const { db } = app.composition.store;
    const sealer = createSealer(app.composition.masterKey);
    const nodeA = createSigningKeysService({ db, sealer });
    const nodeB = createSigningKeysService({ db, sealer });
    const customerId = app.customer.customerId;
    const signing = await nodeA.samlSigning(customerId);
    assert.deepEqual(await nodeB.samlSigning(customerId), signing);
    const certificate = new X509Certificate(signing.certificatePem);
    const [jwk] = (await nodeA.jwks(customerId)).keys;
    assert.deepEqual(certificate.publicKey.export({ format: 'jwk' }), { kty: 'RSA', n: jwk!.n, e: jwk!.e });
    assert.ok(certificate.checkPrivateKey(createPrivateKey(signing.privateKeyPem)));
    assert.equal(certificate.subject, `CN=Latchkey ${app.customer.customerKey}`);
    const row = await db.selectFrom('customer_signing_keys').select('created_at').where('customer_id', '=', customerId).executeTakeFirstOrThrow();
    assert.equal(new Date(certificate.validFrom).getTime(), Math.floor(Number(row.created_at) / 1000) * 1000);
    const other = await app.newCustomer();
    assert.notEqual((await nodeA.samlSigning(other.customer.customerId)).certificatePem, signing.certificatePem);
  });
});
