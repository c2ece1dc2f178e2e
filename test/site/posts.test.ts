/**
 * The posts API: the seeded posts, paging, create/read/update/delete with the spec's fields, and who
 * may do what (readers read published posts; editors by role or group, and site admins, write and
 * see drafts). Posts are site-wide, so on the shared PostgreSQL schema tests assert their own posts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { migrate } from '../../src/store/migrations/migrate.ts';
import { describeEachStore, postgresStore, postgresUrl } from '../helpers/stores.ts';
import { assertJson, bearer, buildSite, normalisePost, POSTS_PATH, SEEDED_POSTS, siteError, type SiteTest } from './helpers.ts';

if (postgresUrl) await postgresStore();

const NOT_EDITOR = siteError(403, 'FORBIDDEN', 'These credentials may not change posts.');
const NOT_FOUND = siteError(404, 'NOT_FOUND', 'Post not found.');
const bad = (description: string) => siteError(400, 'BAD_REQUEST', description);

interface Actors { s: SiteTest; editor: string; reader: string; editorId: number }

async function actors(s: SiteTest): Promise<Actors> {
  const editor = await s.addUser('erin', { groups: ['editors'] });
  await s.addUser('rick');
  return { s, editor: await s.token('erin'), reader: await s.token('rick'), editorId: editor.id };
}

const create = (s: SiteTest, token: string, body: unknown) =>
  s.inject({ method: 'POST', url: POSTS_PATH, headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify(body) });

/** The post as the API answers it, with generated fields checked and fixed. */
function expectedPost(fields: { slug: string; title: string; content?: string; status?: string; author: number }) {
  return {
    id: 0, date: 'D', date_gmt: 'D', guid: { rendered: 'G' }, modified: 'M', modified_gmt: 'M',
    slug: fields.slug, status: fields.status ?? 'publish', type: 'post', link: 'L', title: { rendered: fields.title },
    content: { rendered: fields.content ?? '', protected: false }, author: fields.author,
  };
}

describeEachStore('site posts', (kind) => {
  test('the first start seeds three posts, once', async (t) => {
    const s = await buildSite(t, kind);
    const key = await s.defaultKey();
    const listed = (await s.get(`${POSTS_PATH}?per_page=100`, bearer(key))).json();
    for (const seeded of SEEDED_POSTS) {
      const found = listed.find((p: { slug: string }) => p.slug === seeded.slug);
      assert.ok(found, seeded.slug);
      assert.deepEqual(normalisePost(found), seeded);
    }
    const count = async () => (await s.composition.store.db.selectFrom('site_posts').select((eb) => eb.fn.countAll<number>().as('n'))
      .where('slug', 'in', SEEDED_POSTS.map((p) => p.slug)).executeTakeFirstOrThrow()).n;
    await migrate(s.composition.store);
    await Promise.all([migrate(s.composition.store), migrate(s.composition.store)]);
    assert.equal(Number(await count()), 3);
  });

  test('an editor creates a post: 201 with Location and the spec fields; readers see it', async (t) => {
    const { s, editor, reader, editorId } = await actors(await buildSite(t, kind));
    const res = await create(s, editor, { title: 'Release notes', content: '<p>New:\n<b>everything</b></p>' });
    assert.equal(res.statusCode, 201, res.body);
    const body = res.json();
    assert.equal(res.headers.location, `${POSTS_PATH}/${body.id}`);
    assert.deepEqual(normalisePost(body), expectedPost({ slug: 'release-notes', title: 'Release notes', content: '<p>New:\n<b>everything</b></p>', author: editorId }));
    const one = await s.get(`${POSTS_PATH}/${body.id}`, bearer(reader));
    assertJson(one, 200, body);
    const list = await s.get(`${POSTS_PATH}?per_page=100`, bearer(reader));
    assert.deepEqual(list.json()[0], body, 'newest first');
  });

  test('slugs are unique: a taken one gets -2, -3 (also under concurrency); an explicit slug is kept', async (t) => {
    const { s, editor } = await actors(await buildSite(t, kind));
    const slugs = await Promise.all(Array.from({ length: 4 }, async () => (await create(s, editor, { title: 'Same Title!' })).json().slug));
    assert.deepEqual([...slugs].sort(), ['same-title', 'same-title-2', 'same-title-3', 'same-title-4']);
    assert.equal((await create(s, editor, { title: 'Héllo, Wörld' })).json().slug, 'hello-world-2', 'the seeded hello-world is taken');
    assert.equal((await create(s, editor, { title: 'x', slug: 'my-own-slug' })).json().slug, 'my-own-slug');
    assert.equal((await create(s, editor, { title: '!!!' })).json().slug, 'post');
  });

  test('readers cannot write; the default key cannot write; editors by role, custom group and site admins can', async (t) => {
    const s = await buildSite(t, kind, { env: { LATCHKEY_SITE_EDITOR_GROUP: 'writers', LATCHKEY_SITE_EDITOR_ROLES: 'EDITOR,PUBLISHER' } });
    await s.addUser('rick');
    await s.addUser('wanda', { groups: ['writers'] });
    await s.addUser('erin', { groups: ['editors'] });
    await s.addUser('ada', { groups: ['site-admins'] });
    const roleUser = await s.addUser('paul');
    await s.composition.store.db.updateTable('users').set({ role: 'publisher' }).where('id', '=', roleUser.id).execute();
    assertJson(await create(s, await s.token('rick'), { title: 'x' }), 403, NOT_EDITOR);
    assertJson(await create(s, await s.token('erin'), { title: 'x' }), 403, NOT_EDITOR, );
    for (const name of ['wanda', 'ada', 'paul']) {
      assert.equal((await create(s, await s.token(name), { title: `by ${name}` })).statusCode, 201, name);
    }
  });

  test('drafts: hidden from readers (list and read), shown to editors; status=any lists both', async (t) => {
    const { s, editor, reader } = await actors(await buildSite(t, kind));
    const draft = (await create(s, editor, { title: 'Secret plan', status: 'draft' })).json();
    assert.equal(draft.status, 'draft');
    assertJson(await s.get(`${POSTS_PATH}/${draft.id}`, bearer(reader)), 404, NOT_FOUND);
    assert.equal((await s.get(`${POSTS_PATH}/${draft.id}`, bearer(editor))).statusCode, 200);
    const readerList = (await s.get(`${POSTS_PATH}?per_page=100`, bearer(reader))).json();
    assert.ok(!readerList.some((p: { id: number }) => p.id === draft.id));
    assertJson(await s.get(`${POSTS_PATH}?status=draft`, bearer(reader)), 403, NOT_EDITOR);
    const drafts = (await s.get(`${POSTS_PATH}?status=draft&per_page=100`, bearer(editor))).json();
    assert.ok(drafts.some((p: { id: number }) => p.id === draft.id));
    assert.ok(drafts.every((p: { status: string }) => p.status === 'draft'));
    const any = (await s.get(`${POSTS_PATH}?status=any&per_page=100`, bearer(editor))).json();
    assert.ok(any.some((p: { status: string }) => p.status === 'publish') && any.some((p: { id: number }) => p.id === draft.id));
  });

  test('update (PUT and PATCH, partial) and delete; unknown ids are 404', async (t) => {
    const { s, editor, reader, editorId } = await actors(await buildSite(t, kind));
    const created = (await create(s, editor, { title: 'Draft one', content: '<p>a</p>', status: 'draft' })).json();
    s.clock.advance(60_000);
    const put = await s.inject({ method: 'PUT', url: `${POSTS_PATH}/${created.id}`, headers: bearer(editor), payload: { status: 'publish' } });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(normalisePost(put.json()), expectedPost({ slug: 'draft-one', title: 'Draft one', content: '<p>a</p>', author: editorId }));
    assert.notEqual(put.json().modified, created.modified);
    assert.equal(put.json().date, created.date);
    const patch = await s.inject({ method: 'PATCH', url: `${POSTS_PATH}/${created.id}`, headers: bearer(editor), payload: { title: 'Final', slug: 'final' } });
    assert.deepEqual(normalisePost(patch.json()), expectedPost({ slug: 'final', title: 'Final', content: '<p>a</p>', author: editorId }));
    assertJson(await s.inject({ method: 'PUT', url: `${POSTS_PATH}/${created.id}`, headers: bearer(reader), payload: { title: 'hijack' } }), 403, NOT_EDITOR);

    const deleted = await s.inject({ method: 'DELETE', url: `${POSTS_PATH}/${created.id}`, headers: bearer(editor) });
    assertJson(deleted, 200, { deleted: true, previous: patch.json() });
    assertJson(await s.get(`${POSTS_PATH}/${created.id}`, bearer(editor)), 404, NOT_FOUND);
    assertJson(await s.inject({ method: 'DELETE', url: `${POSTS_PATH}/${created.id}`, headers: bearer(editor) }), 404, NOT_FOUND);
    assertJson(await s.inject({ method: 'PUT', url: `${POSTS_PATH}/999999999`, headers: bearer(editor), payload: { title: 'x' } }), 404, NOT_FOUND);
    for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) assertJson(await s.get(`${POSTS_PATH}/${id}`, bearer(editor)), 404, NOT_FOUND);
  });

  test('bad bodies and queries: 400 BAD_REQUEST naming the field', async (t) => {
    const { s, editor } = await actors(await buildSite(t, kind));
    const cases: [unknown, string][] = [
      [{}, 'title is required'],
      [{ title: '' }, 'title must NOT have fewer than 1 characters'],
      [{ title: 'a'.repeat(501) }, 'title must NOT have more than 500 characters'],
      [{ title: 'tab\there' }, 'title must match pattern "^[^\\u0000-\\u001f\\u007f]*$"'],
      [{ title: 7 }, 'title must be string'],
      [{ title: 'x', status: 'private' }, 'status must be equal to one of the allowed values'],
      [{ title: 'x', slug: 'Not A Slug' }, 'slug must match pattern "^[a-z0-9]+(-[a-z0-9]+)*$"'],
      [{ title: 'x', content: 'bell\u0007' }, 'content must match pattern "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$"'],
      [[], 'body must be object'],
    ];
    for (const [body, description] of cases) assertJson(await create(s, editor, body), 400, bad(description));
    assertJson(await s.inject({ method: 'PUT', url: `${POSTS_PATH}/1`, headers: bearer(editor), payload: { title: '   ' } }), 400, bad('title must not be empty'));
    assertJson(await s.get(`${POSTS_PATH}?per_page=101`, bearer(editor)), 400, bad('per_page must be at most 100'));
    assertJson(await s.get(`${POSTS_PATH}?per_page=0`, bearer(editor)), 400, bad('per_page must match pattern "^[1-9][0-9]{0,2}$"'));
    assertJson(await s.get(`${POSTS_PATH}?page=x`, bearer(editor)), 400, bad('page must match pattern "^[1-9][0-9]{0,5}$"'));
    assertJson(await s.get(`${POSTS_PATH}?status=trash`, bearer(editor)), 400, bad('status must be equal to one of the allowed values'));
  });

  test('paging: per_page and page, with X-WP-Total and X-WP-TotalPages', async (t) => {
    const { s, editor } = await actors(await buildSite(t, kind));
    for (let i = 0; i < 3; i++) await create(s, editor, { title: `Paged ${i}` });
    const all = await s.get(`${POSTS_PATH}?per_page=100`, bearer(editor));
    const total = Number(all.headers['x-wp-total']);
    assert.equal(all.json().length, total);
    const page2 = await s.get(`${POSTS_PATH}?per_page=2&page=2`, bearer(editor));
    assert.equal(page2.headers['x-wp-total'], String(total));
    assert.equal(page2.headers['x-wp-totalpages'], String(Math.ceil(total / 2)));
    assert.deepEqual(page2.json(), all.json().slice(2, 4));
    const beyond = await s.get(`${POSTS_PATH}?page=1000`, bearer(editor));
    assertJson(beyond, 200, []);
    assert.equal((await s.get(POSTS_PATH, bearer(editor))).json().length, Math.min(10, total), 'ten per page by default');
  });

  test('a write shows at once on this node, and on another node within the cache time', async (t) => {
    const { s, editor } = await actors(await buildSite(t, kind));
    const other = await s.composition.buildSiteApp({ customerKey: s.customer.customerKey });
    t.after(() => other.close());
    const otherList = async () => (await other.inject({ url: `${POSTS_PATH}?per_page=100`, headers: bearer(editor) })).json() as { title: { rendered: string } }[];
    const titles = async () => (await otherList()).map((p) => p.title.rendered);
    await titles();
    await create(s, editor, { title: 'Fresh news' });
    assert.equal((await s.get(`${POSTS_PATH}?per_page=100`, bearer(editor))).json()[0].title.rendered, 'Fresh news');
    assert.ok(!(await titles()).includes('Fresh news'), 'the other node serves its cached page');
    s.clock.advance(1000);
    assert.ok((await titles()).includes('Fresh news'));
  });
});
