/**
 * The console's Webhooks page in a real browser: create (a bad URL shown beside its field; the secret
 * shown once), an endpoint's recent deliveries with their answers, Resend (the same webhook-id), and
 * delete after a confirmation page. Both stores.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { describeEachStore } from '../helpers/stores.ts';
import { recordEvents } from '../audit/helpers.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from '../console/browser.ts';
import { startReceiver, webhookHeaders } from './receiver.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console webhooks page', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console webhooks page', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console webhooks page', (kind) => test('create, deliveries with answers, resend, delete', async (t) => {
    const server = await consoleServer(t, kind, { LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true', LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: 'true' });
    const receiver = await startReceiver(t, () => ({ status: 200, body: 'thanks' }));
    const { webhooks } = server.composition.services;
    const customerId = server.customer.customerId;
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();

    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByText('No webhooks yet.').waitFor();
    await page.getByLabel('Endpoint URL').fill('ftp://hooks.example.test/x');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.locator('#webhook-url-error').filter({ hasText: 'Endpoint URL must start with https:// or http://' }).waitFor();
    assert.equal((await webhooks.list(customerId)).length, 0, 'nothing stored');

    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel(/^Events/).fill('user.');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = await page.locator('#webhook-secret').innerText();
    assert.match(secret, /^whsec_/);
    await page.getByText('1 webhook.').waitFor();

    await recordEvents(server, customerId, 1, 'user.updated');
    await server.composition.webhookWorker.runOnce();
    assert.equal(receiver.received.length, 1);
    new Webhook(secret).verify(receiver.received[0]!.body, webhookHeaders(receiver.received[0]!));

    await page.getByRole('link', { name: receiver.url }).click();
    await page.getByRole('heading', { name: 'Recent deliveries' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'user.updated' });
    await row.filter({ hasText: 'delivered' }).filter({ hasText: '200 thanks' }).waitFor();
    const messageId = String(receiver.received[0]!.headers['webhook-id']);
    await page.getByRole('button', { name: `Resend ${messageId}` }).click();
    await page.getByText('Delivery queued again, with the same webhook-id.').waitFor();
    await server.composition.webhookWorker.runOnce();
    assert.equal(receiver.received.length, 2);
    assert.equal(receiver.received[1]!.headers['webhook-id'], messageId);

    await page.getByRole('link', { name: 'All webhooks' }).click();
    await page.getByRole('button', { name: `Delete ${receiver.url}` }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('Webhook deleted.').waitFor();
    assert.deepEqual(await webhooks.list(customerId), []);
  }));
}
