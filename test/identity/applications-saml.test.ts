/**
 * SAML applications through /admin/applications/create|getall and the service's update, on SQLite and
 * PostgreSQL: the service provider's settings given one by one or read from its metadata (as a real SP
 * library writes it), every rule a 400 that creates nothing, a duplicate entity ID a 409 (also when
 * created at once), and a metadata document with a DOCTYPE or an entity refused.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { build, type TestApp } from '../helpers/app.ts';
import { json } from '../helpers/http.ts';
import { describeEachStore, postgresStore, postgresUrl, type StoreKind } from '../helpers/stores.ts';
import { ecSpKeys, nodeSamlMetadata, pemBody, rsaSpKeys } from './saml-sp-fixtures.ts';

if (postgresUrl) await postgresStore();

const validation = (message: string) => ({ status: 'ERROR', code: '400', message });
const DUPLICATE = { status: 'ERROR', code: '409', message: 'an application with this entityId already exists' };
const RSA = rsaSpKeys();
const EC = ecSpKeys();

type App = TestApp & { ck: number };

async function setup(t: TestContext, kind: StoreKind): Promise<App> {
  const app = await build(t, kind);
  return Object.assign(app, { ck: Number(app.customer.customerKey) });
}

const SP = { name: 'Wiki', type: 'SAML', entityId: 'https://wiki.example.com/saml/metadata', acsUrls: ['https://wiki.example.com/saml/acs'] };

const create = (app: App, body: Record<string, unknown>) => app.admin.post('/admin/applications/create', { customerKey: app.ck, ...body });
const listed = async (app: App) => json(await app.admin.post('/admin/applications/getall', { customerKey: app.ck }), 200).applications;

/** An SP's metadata as written by hand: what node-saml writes cannot show several ACS bindings or key uses. */
const handWritten = (spDescriptor: string, entityId = 'urn:example:hand') => `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">${spDescriptor}</md:SPSSODescriptor>
</md:EntityDescriptor>`;
const acs = (binding: 'POST' | 'Redirect', location: string, extra = '') =>
  `<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-${binding}" Location="${location}" ${extra}/>`;
const keyDescriptor = (pem: string, use?: string) =>
  `<md:KeyDescriptor${use ? ` use="${use}"` : ''}><ds:KeyInfo><ds:X509Data><ds:X509Certificate>\n${pem.replace(/-----[A-Z ]+-----/g, '').trim()}\n</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`;

describeEachStore('SAML applications API', (kind) => {
  test('create with every setting: whole body, listed by getall under the same names; the certificate normalised, duplicate ACS URLs once', async (t) => {
    const app = await setup(t, kind);
    const body = {
      ...SP,
      acsUrls: ['https://wiki.example.com/saml/acs', 'http://localhost:8080/acs', 'https://wiki.example.com/saml/acs'],
      nameIdFormat: 'persistent', sloUrl: 'https://wiki.example.com/saml/slo',
      // As pasted from a mail: CRLF line ends and spaces around.
      spCertificate: `  ${RSA.certificatePem.replace(/\n/g, '\r\n')}  `,
    };
    const created = json(await create(app, body), 200);
    assert.deepEqual(created, {
      status: 'SUCCESS',
      application: {
        applicationUuid: created.application.applicationUuid, name: 'Wiki', type: 'SAML', returnUrls: [], redirectUris: [], loginUrls: [],
        entityId: SP.entityId, acsUrls: ['https://wiki.example.com/saml/acs', 'http://localhost:8080/acs'], nameIdFormat: 'persistent',
        sloUrl: 'https://wiki.example.com/saml/slo', spCertificate: RSA.certificatePem,
      },
    });
    const plain = json(await create(app, { ...SP, entityId: 'urn:example:plain' }), 200);
    assert.deepEqual(plain.application, {
      applicationUuid: plain.application.applicationUuid, name: 'Wiki', type: 'SAML', returnUrls: [], redirectUris: [], loginUrls: [],
      entityId: 'urn:example:plain', acsUrls: SP.acsUrls, nameIdFormat: 'emailAddress', sloUrl: '', spCertificate: '',
    });
    // "" is "none", as getall shows it.
    const blank = json(await create(app, { ...SP, entityId: 'urn:example:blank', sloUrl: '', spCertificate: '' }), 200);
    assert.equal(blank.application.sloUrl, '');
    assert.deepEqual(await listed(app), [created.application, plain.application, blank.application]);
    // The identity provider finds it by the AuthnRequest's Issuer.
    const found = await app.composition.services.applications.findBySamlEntityId(app.customer.customerId, SP.entityId);
    assert.equal(found?.uuid, created.application.applicationUuid);
    assert.equal(found?.saml?.spCertificate, RSA.certificatePem);
  });

  test('every rule is a 400 naming the field, and creates nothing', async (t) => {
    const app = await setup(t, kind);
    const metadata = nodeSamlMetadata({ entityId: 'https://sp.example.com', acsUrl: 'https://sp.example.com/acs' });
    const twoCertificates = RSA.certificatePem + RSA.certificatePem;
    const rows: [Record<string, unknown>, string][] = [
      [{ ...SP, entityId: undefined }, 'entityId is required for SAML applications'],
      [{ ...SP, entityId: '' }, 'entityId is required for SAML applications'],
      [{ ...SP, entityId: 'https://sp.example.com/a b' }, 'entityId must not contain whitespace or control characters'],
      [{ ...SP, entityId: 'https://sp.example.com/\ta' }, 'entityId must not contain control characters'],
      [{ ...SP, entityId: 'sp.example.com' }, 'entityId must be a URI or URN (such as https://sp.example.com/saml or urn:example:sp)'],
      [{ ...SP, entityId: `urn:${'x'.repeat(1021)}` }, 'entityId must NOT have more than 1024 characters'],
      [{ ...SP, acsUrls: undefined }, 'acsUrls must hold at least one URL for SAML applications'],
      [{ ...SP, acsUrls: [] }, 'acsUrls must hold at least one URL for SAML applications'],
      [{ ...SP, acsUrls: Array.from({ length: 21 }, (_, i) => `https://sp.example.com/${i}`) }, 'acsUrls must NOT have more than 20 items'],
      [{ ...SP, acsUrls: ['https://sp.example.com/acs', 'ftp://sp.example.com/acs'] }, 'acsUrls[1] must start with https:// or http://'],
      [{ ...SP, acsUrls: ['https://sp.example.com/acs#top'] }, 'acsUrls[0] must not contain a fragment (#)'],
      [{ ...SP, nameIdFormat: 'transient' }, 'nameIdFormat must be equal to one of the allowed values'],
      [{ ...SP, sloUrl: 'javascript:alert(1)' }, 'sloUrl must start with https:// or http://'],
      [{ ...SP, spCertificate: 'hello' }, 'spCertificate must be one PEM certificate (-----BEGIN CERTIFICATE----- …)'],
      [{ ...SP, spCertificate: twoCertificates }, 'spCertificate must be one PEM certificate (-----BEGIN CERTIFICATE----- …)'],
      [{ ...SP, spCertificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, 'spCertificate is not an X.509 certificate'],
      [{ ...SP, spCertificate: EC.certificatePem }, 'spCertificate must hold an RSA public key'],
      [{ ...SP, spCertificate: `${RSA.certificatePem}\u000b` }, 'spCertificate must not contain control characters'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example'], entityId: 'urn:a' }, 'entityId is only for SAML applications'],
      [{ name: 'A', type: 'OAUTH', redirectUris: ['https://a.example/cb'], spMetadata: metadata }, 'spMetadata is only for SAML applications'],
      [{ name: 'A', type: 'JWT', returnUrls: ['https://a.example'], acsUrls: ['https://a.example/acs'] }, 'acsUrls is only for SAML applications'],
      [{ ...SP, returnUrls: ['https://a.example'] }, 'returnUrls is only for JWT applications'],
      [{ name: 'A', type: 'SAML', spMetadata: metadata, entityId: 'urn:a', sloUrl: 'https://a.example/slo' },
        'spMetadata cannot come with entityId, sloUrl: give either spMetadata or the fields'],
      [{ name: 'A', type: 'SAML', spMetadata: metadata, nameIdFormat: 'other' }, 'nameIdFormat must be equal to one of the allowed values'],
      [{ name: 'A', type: 'SAML', spMetadata: `<?xml version="1.0"?>\n<!DOCTYPE md [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n${metadata.replace(/^<\?xml[^>]*>\s*/, '')}` },
        'spMetadata is refused: The SAML message declares a DOCTYPE or an entity, which is not accepted.'],
      [{ name: 'A', type: 'SAML', spMetadata: '<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="a"/>' },
        'spMetadata is refused: The SAML message is not a EntityDescriptor or EntitiesDescriptor.'],
      [{ name: 'A', type: 'SAML', spMetadata: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="urn:idp"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/></md:EntityDescriptor>' },
        'spMetadata is refused: The metadata has no SPSSODescriptor (it describes no service provider).'],
      [{ name: 'A', type: 'SAML', spMetadata: handWritten(acs('Redirect', 'https://sp.example.com/acs')) },
        'spMetadata is refused: The metadata has no AssertionConsumerService with the HTTP-POST binding.'],
      [{ name: 'A', type: 'SAML', spMetadata: handWritten(acs('POST', 'https://sp.example.com/acs')).replace(' entityID="urn:example:hand"', '') },
        'spMetadata is refused: The metadata\'s EntityDescriptor has no entityID.'],
      [{ name: 'A', type: 'SAML', spMetadata: handWritten(acs('POST', 'ftp://sp.example.com/acs')) }, 'spMetadata gives acsUrls[0] that must start with https:// or http://'],
      [{ name: 'A', type: 'SAML', spMetadata: handWritten(acs('POST', 'https://sp.example.com/acs'), 'sp example') },
        'spMetadata gives entityId that must not contain whitespace or control characters'],
      [{ name: 'A', type: 'SAML', spMetadata: handWritten(keyDescriptor(EC.certificatePem, 'signing') + acs('POST', 'https://sp.example.com/acs')) },
        'spMetadata gives spCertificate that must hold an RSA public key'],
      [{ name: 'A', type: 'SAML', spMetadata: 'x'.repeat(64 * 1024 + 1) }, 'spMetadata must NOT have more than 65536 characters'],
    ];
    for (const [body, message] of rows) {
      assert.deepEqual(json(await create(app, body), 400), validation(message), JSON.stringify(body).slice(0, 300));
    }
    const notXml = json(await create(app, { name: 'A', type: 'SAML', spMetadata: '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">' }), 400);
    assert.match(notXml.message, /^spMetadata is refused: The SAML message is not well-formed XML/);
    assert.deepEqual(await listed(app), []);
  });

  test('spMetadata as node-saml writes it: entity ID, ACS URL, single logout, signing certificate and NameID format read; nameIdFormat may come along', async (t) => {
    const app = await setup(t, kind);
    const metadata = nodeSamlMetadata({
      entityId: 'https://sp.example.com/saml', acsUrl: 'https://sp.example.com/saml/acs', sloUrl: 'https://sp.example.com/saml/slo', keys: RSA,
      identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
    });
    const created = json(await create(app, { name: 'SP', type: 'SAML', spMetadata: metadata }), 200);
    assert.deepEqual(created.application, {
      applicationUuid: created.application.applicationUuid, name: 'SP', type: 'SAML', returnUrls: [], redirectUris: [], loginUrls: [],
      entityId: 'https://sp.example.com/saml', acsUrls: ['https://sp.example.com/saml/acs'], nameIdFormat: 'unspecified',
      sloUrl: 'https://sp.example.com/saml/slo', spCertificate: RSA.certificatePem,
    });
    const other = nodeSamlMetadata({ entityId: 'https://other.example.com', acsUrl: 'https://other.example.com/acs' });
    const chosen = json(await create(app, { name: 'Other', type: 'SAML', spMetadata: other, nameIdFormat: 'persistent' }), 200);
    assert.equal(chosen.application.nameIdFormat, 'persistent');
    assert.deepEqual(await listed(app), [created.application, chosen.application]);
  });

  test('spMetadata by hand: HTTP-POST ACS URLs default first then by index, the SLO ResponseLocation, the signing key not the encryption one, an EntitiesDescriptor of one', async (t) => {
    const app = await setup(t, kind);
    const other = rsaSpKeys();
    const descriptor = [
      keyDescriptor(other.certificatePem, 'encryption'),
      keyDescriptor(RSA.certificatePem),
      '<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:SOAP" Location="https://sp.example.com/soap"/>',
      '<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://sp.example.com/slo" ResponseLocation="https://sp.example.com/slo/done"/>',
      '<md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:transient</md:NameIDFormat>',
      '<md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</md:NameIDFormat>',
      acs('POST', 'https://sp.example.com/acs/3', 'index="3"'),
      acs('Redirect', 'https://sp.example.com/acs/redirect', 'index="0"'),
      acs('POST', 'https://sp.example.com/acs/1', 'index="1"'),
      acs('POST', 'https://sp.example.com/acs/default', 'index="7" isDefault="true"'),
    ].join('\n    ');
    const entities = `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${handWritten(descriptor).replace(/^<\?xml[^>]*>\s*/, '')}</md:EntitiesDescriptor>`;
    const created = json(await create(app, { name: 'Hand', type: 'SAML', spMetadata: entities }), 200);
    assert.deepEqual(created.application, {
      applicationUuid: created.application.applicationUuid, name: 'Hand', type: 'SAML', returnUrls: [], redirectUris: [], loginUrls: [],
      entityId: 'urn:example:hand',
      acsUrls: ['https://sp.example.com/acs/default', 'https://sp.example.com/acs/1', 'https://sp.example.com/acs/3'],
      nameIdFormat: 'persistent', sloUrl: 'https://sp.example.com/slo/done', spCertificate: RSA.certificatePem,
    });
    assert.notEqual(pemBody(created.application.spCertificate), pemBody(other.certificatePem));
    const two = `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${[1, 2].map((i) => handWritten(acs('POST', 'https://sp.example.com/acs'), `urn:sp:${i}`).replace(/^<\?xml[^>]*>\s*/, '')).join('')}</md:EntitiesDescriptor>`;
    assert.deepEqual(json(await create(app, { name: 'Two', type: 'SAML', spMetadata: two }), 400),
      validation('spMetadata is refused: The metadata holds 2 EntityDescriptors; give the one of this service provider.'));
  });

  test('a duplicate entityId is 409, also from metadata and when created at once; another customer may register the same SP', async (t) => {
    const app = await setup(t, kind);
    const first = json(await create(app, SP), 200);
    assert.deepEqual(json(await create(app, { ...SP, name: 'Again' }), 409), DUPLICATE);
    const metadata = nodeSamlMetadata({ entityId: SP.entityId, acsUrl: 'https://elsewhere.example.com/acs' });
    assert.deepEqual(json(await create(app, { name: 'From metadata', type: 'SAML', spMetadata: metadata }), 409), DUPLICATE);

    const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => create(app, { ...SP, name: `Racer ${i}`, entityId: 'urn:example:race' })));
    const statuses = racing.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [200, 409, 409, 409, 409, 409], racing.map((r) => r.body).join('\n'));
    for (const r of racing.filter((r) => r.statusCode === 409)) assert.deepEqual(r.json(), DUPLICATE);
    assert.deepEqual((await listed(app)).map((a: { name: string }) => a.name), ['Wiki', racing.find((r) => r.statusCode === 200)!.json().application.name]);

    const other = await app.newCustomer();
    json(await other.admin.post('/admin/applications/create', { customerKey: Number(other.customer.customerKey), ...SP }), 200);
    assert.equal((await listed(app))[0].applicationUuid, first.application.applicationUuid);
  });

  test('update changes the service provider\'s settings by the same rules; its own entityId stays its own, another\'s is a conflict', async (t) => {
    const app = await setup(t, kind);
    const service = app.composition.services.applications;
    const customerId = app.customer.customerId;
    const wiki = json(await create(app, SP), 200).application;
    json(await create(app, { ...SP, name: 'Blog', entityId: 'urn:example:blog' }), 200);
    const updated = await service.update(customerId, wiki.applicationUuid, {
      name: 'Wiki 2', entityId: SP.entityId, acsUrls: ['https://wiki.example.com/new-acs'], nameIdFormat: 'unspecified',
      sloUrl: 'https://wiki.example.com/slo', spCertificate: RSA.certificatePem,
    }, SYSTEM);
    assert.deepEqual(updated.saml, {
      entityId: SP.entityId, acsUrls: ['https://wiki.example.com/new-acs'], nameIdFormat: 'unspecified', sloUrl: 'https://wiki.example.com/slo', spCertificate: RSA.certificatePem,
    });
    const [afterUpdate] = await listed(app);
    assert.equal(afterUpdate.name, 'Wiki 2');
    assert.deepEqual(afterUpdate.acsUrls, ['https://wiki.example.com/new-acs']);
    await assert.rejects(service.update(customerId, wiki.applicationUuid, { name: 'Wiki', entityId: 'urn:example:blog', acsUrls: SP.acsUrls }, SYSTEM),
      { name: 'Conflict', message: 'an application with this entityId already exists' });
    await assert.rejects(service.update(customerId, wiki.applicationUuid, { name: 'Wiki', entityId: SP.entityId, acsUrls: [] }, SYSTEM),
      { name: 'Invalid', message: 'acsUrls must hold at least one URL for SAML applications' });
    await assert.rejects(service.update(customerId, wiki.applicationUuid, { name: 'Wiki', entityId: SP.entityId, acsUrls: SP.acsUrls, returnUrls: ['https://a.example'] }, SYSTEM),
      { name: 'Invalid', message: 'returnUrls is only for JWT applications' });
    // Metadata replaces the settings, as on create.
    const fromMetadata = await service.update(customerId, wiki.applicationUuid, {
      name: 'Wiki', spMetadata: nodeSamlMetadata({ entityId: 'urn:example:wiki-new', acsUrl: 'https://wiki.example.com/acs-3' }),
    }, SYSTEM);
    assert.deepEqual(fromMetadata.saml, { entityId: 'urn:example:wiki-new', acsUrls: ['https://wiki.example.com/acs-3'], nameIdFormat: 'emailAddress', sloUrl: null, spCertificate: null });
    // The refused updates changed nothing.
    assert.deepEqual((await listed(app)).map((a: { entityId: string }) => a.entityId), ['urn:example:wiki-new', 'urn:example:blog']);
  });
});
