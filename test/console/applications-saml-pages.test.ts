/**
 * SAML applications in the console, in a real browser: Create application with the service provider's
 * fields (every problem beside its field, what was typed kept), or with its metadata pasted; the
 * application's page shows the settings and the identity provider's metadata URL to give the SP; Edit
 * changes them by the same rules, a duplicate entity ID said beside the field. One server and one
 * browser per store.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { describeEachStore } from '../helpers/stores.ts';
import { nodeSamlMetadata, rsaSpKeys } from '../identity/saml-sp-fixtures.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console SAML application pages', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console SAML application pages', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console SAML application pages', (kind) => test('SAML applications: create from fields or metadata, the page, edit', async (t) => {
    const server = await consoleServer(t, kind);
    const customerId = server.customer.customerId;
    const { applications } = server.composition.services;
    const keys = rsaSpKeys();
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    const root = `${server.url}/console`;
    const metadataUrl = `${server.composition.services.oidc.customerIssuer(server.customer.customerKey)}/saml/metadata`;

    await t.test('create from the fields: each problem beside its field, what was typed kept; then the page with the metadata URL', async () => {
      await page.goto(`${root}/applications`);
      await page.getByLabel('Application name').fill('Wiki');
      await page.getByLabel('Type').selectOption({ label: 'SAML' });
      await page.getByLabel('Entity ID').fill('wiki example');
      await page.getByLabel('ACS URLs').fill('https://wiki.example.test/acs\nftp://wiki.example.test/acs');
      await page.getByLabel('SP certificate').fill('not a certificate');
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByRole('alert').filter({ hasText: '3 problems' }).waitFor();
      assert.equal(await page.locator('#app-entity-id-error').innerText(), 'Entity ID must not contain whitespace or control characters');
      assert.equal(await page.locator('#app-acs-urls-error').innerText(), 'ACS URLs: ftp://wiki.example.test/acs must start with https:// or http://');
      assert.equal(await page.locator('#app-sp-certificate-error').innerText(), 'SP certificate must be one PEM certificate (-----BEGIN CERTIFICATE----- …)');
      assert.equal(await page.getByLabel('Entity ID').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.getByLabel('Type').inputValue(), 'SAML');
      assert.equal(await page.getByLabel('ACS URLs').inputValue(), 'https://wiki.example.test/acs\nftp://wiki.example.test/acs');
      assert.equal((await applications.list(customerId)).length, 0, 'nothing stored');

      await page.getByLabel('Entity ID').fill('https://wiki.example.test/saml');
      await page.getByLabel('ACS URLs').fill('https://wiki.example.test/acs\n\n  http://localhost:8080/acs  ');
      await page.getByLabel('NameID format').selectOption({ label: 'Persistent (an opaque identifier per user and application)' });
      await page.getByLabel('Single logout URL').fill('https://wiki.example.test/slo');
      await page.getByLabel('SP certificate').fill(keys.certificatePem);
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByText('Application created.').waitFor();
      await page.getByRole('heading', { name: 'Wiki', level: 1 }).waitFor();
      const [wiki] = await applications.list(customerId);
      assert.deepEqual(wiki?.saml, {
        entityId: 'https://wiki.example.test/saml', acsUrls: ['https://wiki.example.test/acs', 'http://localhost:8080/acs'], nameIdFormat: 'persistent',
        sloUrl: 'https://wiki.example.test/slo', spCertificate: keys.certificatePem,
      });
      assert.equal(await page.getByRole('link', { name: metadataUrl }).getAttribute('href'), metadataUrl);
      const facts = await page.locator('dl.facts').innerText();
      assert.match(facts, /Entity ID\s+https:\/\/wiki\.example\.test\/saml/);
      assert.match(facts, /ACS URLs\s+https:\/\/wiki\.example\.test\/acs \(default\)\s+http:\/\/localhost:8080\/acs/);
      assert.match(facts, /SP certificate\s+CN=sp\.example\.com: requests must be signed/);
    });

    await t.test('create from pasted metadata; the same SP again is refused beside the metadata; the fields with metadata too', async () => {
      const metadata = nodeSamlMetadata({ entityId: 'https://crm.example.test/saml', acsUrl: 'https://crm.example.test/saml/acs' });
      await page.goto(`${root}/applications`);
      await page.getByLabel('Application name').fill('CRM');
      await page.getByLabel('Type').selectOption({ label: 'SAML' });
      await page.getByLabel('Entity ID').fill('urn:example:crm');
      await page.getByLabel('SP metadata').fill(metadata);
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.locator('#app-sp-metadata-error').filter({ hasText: 'SP metadata cannot come with entityId: give either spMetadata or the fields' }).waitFor();
      assert.equal(await page.getByLabel('SP metadata').inputValue(), metadata);

      await page.getByLabel('Entity ID').fill('');
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.getByText('Application created.').waitFor();
      await page.getByRole('heading', { name: 'CRM', level: 1 }).waitFor();
      const crm = (await applications.list(customerId)).find((a) => a.name === 'CRM');
      assert.deepEqual(crm?.saml, { entityId: 'https://crm.example.test/saml', acsUrls: ['https://crm.example.test/saml/acs'], nameIdFormat: 'emailAddress', sloUrl: null, spCertificate: null });

      await page.goto(`${root}/applications`);
      await page.getByLabel('Application name').fill('CRM again');
      await page.getByLabel('Type').selectOption({ label: 'SAML' });
      await page.getByLabel('SP metadata').fill(metadata);
      await page.getByRole('button', { name: 'Create application' }).click();
      await page.locator('#app-sp-metadata-error').filter({ hasText: 'Entity ID is already used by another application of yours.' }).waitFor();
      assert.equal((await applications.list(customerId)).length, 2);
    });

    await t.test('edit: the settings shown, changed by the same rules; a taken entity ID beside its field; metadata pasted replaces them', async () => {
      const wiki = (await applications.list(customerId)).find((a) => a.name === 'Wiki')!;
      await page.goto(`${root}/applications/${wiki.uuid}`);
      const edit = page.getByRole('form', { name: 'Edit' });
      assert.equal(await edit.getByLabel('Entity ID').inputValue(), 'https://wiki.example.test/saml');
      assert.equal(await edit.getByLabel('ACS URLs').inputValue(), 'https://wiki.example.test/acs\nhttp://localhost:8080/acs');
      assert.equal(await edit.getByLabel('NameID format').inputValue(), 'persistent');
      assert.equal(await edit.getByLabel('Single logout URL').inputValue(), 'https://wiki.example.test/slo');
      assert.equal(await edit.getByLabel('SP certificate').inputValue(), keys.certificatePem);

      await edit.getByLabel('ACS URLs').fill('');
      await edit.getByLabel('Single logout URL').fill('https://wiki.example.test/slo#x');
      await edit.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('alert').filter({ hasText: '2 problems' }).waitFor();
      assert.equal(await page.locator('#acsUrls-error').innerText(), 'ACS URLs must hold at least one URL for SAML applications');
      assert.equal(await page.locator('#sloUrl-error').innerText(), 'Single logout URL must not contain a fragment (#)');
      assert.equal(await edit.getByLabel('Single logout URL').inputValue(), 'https://wiki.example.test/slo#x');

      await edit.getByLabel('Entity ID').fill('https://crm.example.test/saml');
      await edit.getByLabel('ACS URLs').fill('https://wiki.example.test/acs2');
      await edit.getByLabel('Single logout URL').fill('');
      await edit.getByRole('button', { name: 'Save' }).click();
      await page.locator('#entityId-error').filter({ hasText: 'Entity ID is already used by another application of yours.' }).waitFor();
      assert.equal((await applications.get(customerId, wiki.uuid)).saml?.entityId, 'https://wiki.example.test/saml', 'nothing stored');

      await edit.getByLabel('Entity ID').fill('https://wiki.example.test/saml2');
      await edit.getByLabel('SP certificate').fill('');
      await edit.getByLabel('NameID format').selectOption('unspecified');
      await edit.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Changes saved.').waitFor();
      assert.deepEqual((await applications.get(customerId, wiki.uuid)).saml, {
        entityId: 'https://wiki.example.test/saml2', acsUrls: ['https://wiki.example.test/acs2'], nameIdFormat: 'unspecified', sloUrl: null, spCertificate: null,
      });

      await page.getByRole('form', { name: 'Edit' }).getByLabel('SP metadata').fill(nodeSamlMetadata({
        entityId: 'https://wiki.example.test/saml3', acsUrl: 'https://wiki.example.test/acs3', sloUrl: 'https://wiki.example.test/slo3', keys,
      }));
      await page.getByRole('form', { name: 'Edit' }).getByRole('button', { name: 'Save' }).click();
      await page.getByText('Changes saved.').waitFor();
      assert.deepEqual((await applications.get(customerId, wiki.uuid)).saml, {
        entityId: 'https://wiki.example.test/saml3', acsUrls: ['https://wiki.example.test/acs3'], nameIdFormat: 'unspecified',
        sloUrl: 'https://wiki.example.test/slo3', spCertificate: keys.certificatePem,
      });
      assert.equal(await page.getByRole('form', { name: 'Edit' }).getByLabel('SP metadata').inputValue(), '', 'metadata is read, not kept');
    });
  }));
}
