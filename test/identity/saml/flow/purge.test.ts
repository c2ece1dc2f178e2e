/**
 * The SAML purge (a cluster job): request IDs are deleted once their requests would be refused as too
 * old anyway, held requests once expired; nothing younger.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { samlPurgeJob } from '../../../../src/identity/saml/purge.ts';
import { describeEachStore } from '../../../helpers/stores.ts';
import { deploy } from '../../sign-in/helpers.ts';
import { Browser } from '../../../helpers/relying-party.ts';
import { createSamlApplication, redirectRequest, serviceProvider } from './helpers.ts';

describeEachStore('SAML purge', (kind) => {
  test('expired request IDs and held requests are deleted; live ones are kept', async (t) => {
    const d = await deploy(t, kind);
    const app = await createSamlApplication(d);
    const { db } = d.composition.store;
    const count = async () => ({
      ids: (await db.selectFrom('saml_request_ids').select('request_id').where('customer_id', '=', d.customer.customerId).execute()).length,
      held: (await db.selectFrom('saml_requests').select('id_hash').where('customer_id', '=', d.customer.customerId).execute()).length,
    });
    const { url } = await redirectRequest(serviceProvider(d, app));
    assert.equal((await new Browser().fetch(url)).status, 303);
    assert.deepEqual(await count(), { ids: 1, held: 1 });
    const job = samlPurgeJob({ db, clock: d.clock, intervalMs: 1 });

    assert.equal(await job.tick(), true);
    assert.deepEqual(await count(), { ids: 1, held: 1 });
    // Past the request's 5 minutes, within the held request's 15.
    d.clock.advance(6 * 60_000);
    assert.equal(await job.tick(), true);
    assert.deepEqual(await count(), { ids: 0, held: 1 });
    d.clock.advance(10 * 60_000);
    assert.equal(await job.tick(), true);
    assert.deepEqual(await count(), { ids: 0, held: 0 });
  });
});
