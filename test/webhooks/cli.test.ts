/** `latchkey webhook create|list|delete` with --json on both stores: the same service as the admin routes. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { parseArgs } from '../../src/cli/args.ts';
import type { Command } from '../../src/cli/command.ts';
import { webhookCreate, webhookDelete, webhookList } from '../../src/cli/commands/webhook.ts';
import type { Composition } from '../../src/compose/index.ts';
import { build } from '../helpers/app.ts';
import { describeEachStore } from '../helpers/stores.ts';

const run = async (command: Command, app: Composition, argv: string[]) => (await command.run(parseArgs(argv), { app: app, auditContext: SYSTEM })).json as any;

describeEachStore('webhook commands', (kind) => {
  it('create (secret once), list (no secret; the API sees the same), delete; a bad URL is refused with its reason', async (t) => {
    const built = await build(t, kind);
    const app = built.composition;
    const ck = ['--customer-key', built.customer.customerKey, '--json'];
    const created = await run(webhookCreate, app, ['webhook', 'create', '--url', 'https://hooks.example.com/latchkey', '--events', 'user.,group.', ...ck]);
    assert.match(created.webhookId, /^wh_[0-9a-f]{32}$/);
    assert.match(created.secret, /^whsec_/);
    const listed = await run(webhookList, app, ['webhook', 'list', ...ck]);
    assert.deepEqual(listed.map((w: any) => [w.webhookId, w.url, w.events, w.enabled]), [[created.webhookId, 'https://hooks.example.com/latchkey', ['user.', 'group.'], true]]);
    assert.equal(JSON.stringify(listed).includes('whsec_'), false);
    const api = (await built.admin.post('/admin/webhooks/getall', { customerKey: Number(built.customer.customerKey) })).json();
    assert.deepEqual(api.webhooks, listed);
    await assert.rejects(run(webhookCreate, app, ['webhook', 'create', '--url', 'http://hooks.example.com/x', ...ck]), { message: /^url must start with https:\/\// });
    assert.deepEqual(await run(webhookDelete, app, ['webhook', 'delete', '--webhook-id', created.webhookId, ...ck]), { webhookId: created.webhookId, deleted: true });
    assert.deepEqual(await run(webhookList, app, ['webhook', 'list', ...ck]), []);
    await assert.rejects(run(webhookDelete, app, ['webhook', 'delete', '--webhook-id', created.webhookId, ...ck]), { code: 'not_found' });
  });
});
