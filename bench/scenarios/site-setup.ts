/** A site user with a password, 20 published posts, and a JWT from the real token endpoint. */
import { SYSTEM } from '../../src/audit/context.ts';
import type { Bench, SiteFace } from '../harness.ts';
import { createPostsService } from '../../src/site/posts/service.ts';

export const SITE_USER = 'bench-site-user';
export const SITE_PASSWORD = 'violet-otter-harbour-42';
export const POSTS_PATH = '/cms-json/cms/v2/posts?per_page=20';
export const TOKEN_PATH = '/cms-json/api/v1/token';

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
  const response = await fetch(`http://127.0.0.1:${bench.server.ports[face]}${TOKEN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username: SITE_USER, password: SITE_PASSWORD }),
  });
  const body = await response.json() as { jwt_token?: string };
  if (!response.ok || !body.jwt_token) throw new Error(`token endpoint answered ${response.status}: ${JSON.stringify(body)}`);
  return body.jwt_token;
}
