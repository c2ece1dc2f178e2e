import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

/** The posts the first start shows: inserted here, so they are written once whatever the node count. */
const SEED_POSTS = [
  {
    slug: 'hello-world',
    title: 'Hello world',
    content: '<p>Welcome to the Latchkey content site. Every route of its REST API is protected.</p>\n',
  },
  {
    slug: 'getting-a-token',
    title: 'Getting a token',
    content: '<p>POST your username and password to <code>/cms-json/api/v1/token</code>, then send '
      + '<code>Authorization: Bearer &lt;jwt_token&gt;</code>.</p>\n',
  },
  {
    slug: 'api-keys-and-provider-tokens',
    title: 'API keys and provider tokens',
    content: '<p>Read-only clients use the site API key; integrations use a user API key, an API token, '
      + 'or a token from the configured OpenID provider.</p>\n',
  },
];

/** The content site: its posts, API keys, failed-login counters and settings set from the CLI. */
export function siteMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      // Posts belong to the site, not to a customer (DESIGN, Site).
      await withId(db.schema.createTable('site_posts'), dialect)
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('status', 'text', notNull)
        .addColumn('type', 'text', (c) => c.notNull().defaultTo('post'))
        .addColumn('title', 'text', notNull)
        .addColumn('content', 'text', notNull)
        // The writing user's id (0 for the seeded posts); no foreign key: a post outlives its author.
        .addColumn('author_id', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
      await db.schema.createIndex('site_posts_listing').on('site_posts').columns(['status', 'created_at', 'id']).execute();

      await withId(db.schema.createTable('site_api_keys'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        // null: the site's default (read-only) key; deleting a user deletes their keys.
        .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
        // SHA-256 hex of the whole key: the key itself is never stored.
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', instant, notNull)
        .addColumn('expires_at', instant)
        .addColumn('revoked_at', instant)
        .execute();
      await db.schema.createIndex('site_api_keys_owner').on('site_api_keys').columns(['customer_id', 'user_id', 'id']).execute();
      // At most one live default key per customer, enforced by the database under concurrency.
      await sql`create unique index site_api_keys_one_default on site_api_keys (customer_id) where user_id is null and revoked_at is null`.execute(db);

      // One row per throttled key ("u:<customerId>:<username>" or "ip:<address>"), shared by every node.
      await db.schema.createTable('site_login_failures')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('failures', 'integer', notNull)
        .addColumn('last_failure_at', instant, notNull)
        .addColumn('blocked_until', instant, (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('site_login_failures_age').on('site_login_failures').columns(['last_failure_at']).execute();

      await db.schema.createTable('site_settings')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();

      const now = Date.now();
      await db.insertInto('site_posts').values(SEED_POSTS.map((post, i) => ({
        slug: post.slug,
        status: 'publish',
        type: 'post',
        title: post.title,
        content: post.content,
        author_id: 0,
        // A second apart, oldest first, so the listing (newest first) has a stable order.
        created_at: now - (SEED_POSTS.length - i) * 1000,
        updated_at: now - (SEED_POSTS.length - i) * 1000,
      }))).execute();
    },
  };
}
