/**
 * The Groups pages in a real browser, through the names DESIGN.md fixes: the list's search and pages,
 * a group's Rename / Make default / Delete group (asked first; a reload of the result repeats nothing),
 * and Add member by searching users, with JavaScript (users appear as one types) and without (press
 * Add, pick from the results). One server and one browser per store.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SYSTEM } from '../../src/audit/context.ts';
import { describeEachStore } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, signIn } from './browser.ts';

after(closeBrowser);

if (!findChromium()) {
  if (process.env.CI === 'true') test('console groups pages', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('console groups pages', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('console groups pages', (kind) => test('groups: list, search, pages, rename, default, delete, members', async (t) => {
    const server = await consoleServer(t, kind);
    const customerId = server.customer.customerId;
    const { groups, users } = server.composition.services;
    const page = await (await browser(t)).newPage();
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    const root = `${server.url}/console`;
    const names = async () => (await groups.search(customerId, { text: '', offset: 0, limit: 1000 })).items.map((g) => g.name);

    await t.test('the list: a search by any part of the name, pages of 50 with the total', async () => {
      // 60 teams and DEFAULT: 61 groups, two pages.
      await groups.upsert(customerId, Array.from({ length: 60 }, (_, i) => ({ name: `team ${String(i + 1).padStart(2, '0')}`, isDefault: false, attributes: {} })), SYSTEM);
      await page.getByRole('link', { name: 'Groups', exact: true }).click();
      await page.getByText('Showing 1–50 of 61 groups.').waitFor();
      await page.getByRole('link', { name: 'DEFAULT', exact: true }).waitFor();
      await page.getByRole('link', { name: 'Next page' }).click();
      await page.getByText('Showing 51–61 of 61 groups.').waitFor();
      await page.getByRole('link', { name: 'team 60', exact: true }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);
      await page.getByRole('link', { name: 'Previous page' }).click();
      await page.getByText('Showing 1–50 of 61 groups.').waitFor();

      await page.getByRole('searchbox', { name: 'Search groups' }).fill('AM 0');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText('Showing 1–9 of 9 groups whose name contains "AM 0".').waitFor();
      assert.equal(await page.getByRole('link', { name: /^team 0\d$/ }).count(), 9);
      await page.getByRole('searchbox', { name: 'Search groups' }).fill('50%');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText('No group name contains "50%".').waitFor();
      await page.getByText('0 groups whose name contains "50%".').waitFor();
    });

    await t.test('a new group shows every problem beside its field and keeps what was typed', async () => {
      await page.goto(`${root}/groups`);
      await page.getByLabel('Group name').fill('team 07');
      await page.getByRole('button', { name: 'Create group' }).click();
      await page.getByRole('alert').filter({ hasText: 'A group named team 07 already exists.' }).waitFor();
      assert.equal(await page.getByLabel('Group name').inputValue(), 'team 07');
      assert.equal(await page.getByLabel('Group name').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.locator('#name-error').innerText(), 'A group named team 07 already exists.');
    });

    await t.test('rename, make default, delete after confirming; reloading a result repeats nothing', async () => {
      await page.goto(`${root}/groups?q=team+01`);
      await page.getByRole('link', { name: 'team 01', exact: true }).click();
      await page.getByRole('heading', { name: 'team 01', level: 1 }).waitFor();

      // A name another group has: refused beside the field, the typed name kept.
      const rename = page.getByRole('form', { name: 'Rename' });
      await rename.getByLabel('Group name').fill('Team 02');
      await rename.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('alert').filter({ hasText: 'Group name Team 02 is taken by another group' }).waitFor();
      assert.equal(await page.getByLabel('Group name').inputValue(), 'Team 02');
      assert.match((await page.locator('#group-name-error').innerText()), /taken by another group/);

      await page.getByLabel('Group name').fill('Editors');
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Group renamed.').waitFor();
      await page.getByRole('heading', { name: 'Editors', level: 1 }).waitFor();
      assert.ok((await names()).includes('Editors'));
      assert.ok(!(await names()).includes('team 01'));

      await page.getByRole('button', { name: 'Make default' }).click();
      await page.getByText('This is now the default group').waitFor();
      assert.equal((await groups.findByName(customerId, 'Editors'))?.isDefault, true);
      assert.equal((await groups.findByName(customerId, 'DEFAULT'))?.isDefault, false);
      assert.equal(await page.getByRole('button', { name: 'Make default' }).count(), 0);
      // A user created now joins it.
      await users.create(customerId, { username: 'newbie', email: 'newbie@example.test', firstName: 'N', lastName: 'B', customAttributes: {} }, SYSTEM);
      assert.deepEqual((await users.getWithGroups(customerId, 'newbie')).groups, ['Editors']);

      await page.getByRole('button', { name: 'Delete group' }).click();
      await page.getByRole('heading', { name: 'Delete group Editors?' }).waitFor();
      assert.ok((await names()).includes('Editors'), 'nothing is deleted before confirming');
      await page.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.getByText('Group deleted.').waitFor();
      assert.ok(!(await names()).includes('Editors'));
      assert.equal((await groups.findByName(customerId, 'DEFAULT'))?.isDefault, true, 'the built-in group is the default again');
      const count = (await names()).length;
      await page.reload();
      await page.getByRole('heading', { name: 'Groups', level: 1 }).waitFor();
      assert.equal((await names()).length, count, 'a reload deletes nothing more');

      // The built-in group can be made default but neither renamed nor deleted.
      await page.goto(`${root}/groups/DEFAULT`);
      assert.equal(await page.getByRole('button', { name: 'Delete group' }).count(), 0);
      assert.equal(await page.getByLabel('Group name').count(), 0);
    });

    for (const users of ['grace', 'gracie', 'hopper']) {
      await server.composition.services.users.create(customerId, { username: users, email: `${users}@example.test`, firstName: users, lastName: 'H', customAttributes: {} }, SYSTEM);
    }

    await t.test('add member without JavaScript: type, press Add, pick from the results', async () => {
      const plain = await (await browser(t, { javaScriptEnabled: false })).newPage();
      await signIn(plain, server);
      await plain.getByRole('heading', { name: 'Account' }).waitFor();
      await plain.goto(`${root}/groups/team%2003`);
      const add = plain.getByRole('form', { name: 'Add member' });
      await add.getByRole('searchbox').fill('nobody');
      await add.getByRole('button', { name: 'Add' }).click();
      await plain.getByRole('alert').filter({ hasText: `No user's username or e-mail starts with "nobody".` }).waitFor();
      assert.equal(await plain.getByRole('searchbox', { name: 'Search users' }).inputValue(), 'nobody');

      await plain.getByRole('searchbox', { name: 'Search users' }).fill('GRAC');
      await plain.getByRole('button', { name: 'Add' }).click();
      await plain.getByText('2 users found: pick one and press Add.').waitFor();
      await plain.getByLabel('gracie · gracie@example.test').check();
      await plain.getByRole('button', { name: 'Add' }).click();
      await plain.getByText('Member added.').waitFor();
      await plain.getByRole('link', { name: 'gracie' }).waitFor();
      await plain.getByText('1 member.').waitFor();

      // One match is added at once.
      await plain.getByRole('searchbox', { name: 'Search users' }).fill('hopper@');
      await plain.getByRole('button', { name: 'Add' }).click();
      await plain.getByText('Member added.').waitFor();
      await plain.getByText('2 members.').waitFor();
      const team = await groups.findByName(customerId, 'team 03');
      const { members } = await groups.listMembers(customerId, team!.id, { after: 0, limit: 10 });
      assert.deepEqual(members.map((m) => m.username).sort(), ['gracie', 'hopper']);

      // Remove asks first, on a page of its own; Cancel goes back with nothing changed.
      await plain.getByRole('button', { name: 'Remove gracie' }).click();
      await plain.getByRole('heading', { name: 'Remove gracie from team 03?' }).waitFor();
      await plain.getByText('gracie (gracie@example.test) leaves the group team 03').waitFor();
      await plain.getByRole('link', { name: 'Cancel' }).click();
      await plain.getByText('2 members.').waitFor();
      await plain.getByRole('button', { name: 'Remove gracie' }).click();
      assert.equal((await groups.listMembers(customerId, team!.id, { after: 0, limit: 10 })).members.length, 2, 'asking changes nothing');
      await plain.getByRole('button', { name: 'Remove', exact: true }).click();
      await plain.getByText('Member removed.').waitFor();
      await plain.getByText('1 member.').waitFor();
      // The answer was a redirect: a reload posts nothing, so gracie, added back meanwhile, stays.
      await groups.updateMembers(customerId, 'team 03', [{ primaryEmail: 'gracie@example.test', remove: false }], SYSTEM);
      const posts: string[] = [];
      plain.on('request', (request) => { if (request.method() === 'POST') posts.push(request.url()); });
      await plain.reload();
      await plain.getByText('2 members.').waitFor();
      assert.deepEqual(posts, []);
      assert.deepEqual((await groups.listMembers(customerId, team!.id, { after: 0, limit: 10 })).members.map((m) => m.username).sort(), ['gracie', 'hopper']);
    });

    await t.test('add member with JavaScript: the users found appear as one types', async () => {
      await page.goto(`${root}/groups/team%2004`);
      await page.getByRole('searchbox', { name: 'Search users' }).pressSequentially('gra');
      await page.getByRole('button', { name: 'grace · grace@example.test' }).click();
      await page.getByText('Member added.').waitFor();
      await page.getByRole('link', { name: 'grace', exact: true }).waitFor();
      const team = await groups.findByName(customerId, 'team 04');
      assert.deepEqual((await groups.listMembers(customerId, team!.id, { after: 0, limit: 10 })).members.map((m) => m.username), ['grace']);
    });
  }));
}
