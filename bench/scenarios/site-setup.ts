/** A site user with a password, 20 published posts, and a JWT from the real token endpoint. */
import { SYSTEM } from '../../src/audit/context.ts';
import type { Bench, Side, SiteFace } from '../harness.ts';
import { createPostsService } from '../../src/site/posts/service.ts';

export const SITE_USER = 'bench-site-user';
export const SITE_PASSWORD = 'violet-otter-harbour-42';
const POSTS = '/cms-json/cms/v2/posts';
export const POSTS_PATH = `${POSTS}?per_page=20`;
export const TOKEN_PATH = '/cms-json/api/v1/token';
/** The site's editor group as configured by default (LATCHKEY_SITE_EDITOR_GROUP). */
const EDITORS = 'editors';

export async function siteUserId(bench: Bench, username = SITE_USER): Promise<number> {
  const { users } = bench.composition.services;
  const customerId = bench.customer.customerId;
  const existing = await users.findByLogin(customerId, username);
  if (existing) return existing.id;
  const created = await users.create(customerId, {
    username, email: `${username}@bench.example`, firstName: 'Bench', lastName: 'Site',
    password: SITE_PASSWORD, customAttributes: {},
  }, SYSTEM);
  return created.id;
}

/**
 * `count` site users with the same password, for logins under load: the token endpoint reserves each
 * login against its user (at most LATCHKEY_SITE_LOGIN_USER_ATTEMPTS, 5, in flight), so one user at 10
 * connections would measure the throttle's refusals, not the logins.
 */
export async function siteLoginUsers(bench: Bench, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => (i === 0 ? SITE_USER : `${SITE_USER}-${i + 1}`));
  for (const name of names) await siteUserId(bench, name);
  return names;
}

export async function ensurePosts(bench: Bench, count: number): Promise<void> {
  const posts = createPostsService({ db: bench.composition.store.db, clock: bench.composition.clock });
  const authorId = await siteUserId(bench);
  const { total } = await posts.list({ status: 'publish', page: 1, perPage: 1 });
  for (let i = total; i < count; i++) {
    await posts.create({ title: `Bench post ${i + 1}`, content: `<p>Body of bench post ${i + 1}.</p>`, status: 'publish' }, authorId);
  }
}

/** A JWT for the bench's site user, from the token endpoint of the face given. */
export async function login(bench: Bench, face: SiteFace = 'site'): Promise<string> {
  await siteUserId(bench);
  const token = await tokenFrom(`http://127.0.0.1:${bench.server.ports[face]}${TOKEN_PATH}`);
  if (!token) throw new Error(`the ${face} token endpoint refused the bench's site user`);
  return token;
}

/**
 * The same setup on one side of a side-by-side run (--baseline), through the wire only, so that any
 * commit serving these routes can be measured: the editors group and the site user (admin API), a
 * JWT from each site face's token endpoint, and the posts written through the site's API up to `posts`.
 */
export async function siteSide(side: Side, posts: number): Promise<{ hs256: string; rs256: string }> {
  const { customerKey } = side.customer;
  let hs256 = await tokenFrom(side.url('site', TOKEN_PATH));
  if (!hs256) {
    await side.call('/api/admin/groups/update', { customerKey, groups: [{ groupName: EDITORS, isDefault: 'false' }] });
    await side.call('/api/admin/users/create', {
      customerKey, username: SITE_USER, email: `${SITE_USER}@bench.example`, firstName: 'Bench', lastName: 'Site', password: SITE_PASSWORD, groups: [{ name: EDITORS }],
    });
    hs256 = await tokenFrom(side.url('site', TOKEN_PATH));
    if (!hs256) throw new Error(`${side.name}: the site user made through the admin API cannot sign in`);
  }
  const auth = { authorization: `Bearer ${hs256}` };
  const listed = await fetch(side.url('site', POSTS_PATH), { headers: auth });
  if (!listed.ok) throw new Error(`${side.name}: GET posts answered ${listed.status}`);
  for (let i = Number(listed.headers.get('x-wp-total')); i < posts; i++) {
    const created = await fetch(side.url('site', POSTS), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: `Bench post ${i + 1}`, content: `<p>Body of bench post ${i + 1}.</p>`, status: 'publish' }),
    });
    if (created.status !== 201) throw new Error(`${side.name}: POST posts answered ${created.status}: ${(await created.text()).slice(0, 300)}`);
  }
  const rs256 = await tokenFrom(side.url('siteRs256', TOKEN_PATH));
  if (!rs256) throw new Error(`${side.name}: the RS256 site's token endpoint refused the site user`);
  return { hs256, rs256 };
}

/** A credential made through one of the site's own routes with the user's JWT; returns its secret field. */
export async function siteCredential(side: Side, jwt: string, path: string, body: Record<string, unknown>, field: string): Promise<string> {
  const response = await fetch(side.url('site', path), {
    method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const answer = await response.json() as Record<string, unknown>;
  const secret = answer[field];
  if (response.status !== 201 || typeof secret !== 'string') throw new Error(`${side.name}: POST ${path} answered ${response.status}: ${JSON.stringify(answer).slice(0, 300)}`);
  return secret;
}

/** The site user's JWT from a token endpoint, or undefined when it refuses the login. */
async function tokenFrom(url: string): Promise<string | undefined> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: SITE_USER, password: SITE_PASSWORD }),
  });
  const body = await response.json() as { jwt_token?: string };
  return response.ok ? body.jwt_token : undefined;
}
