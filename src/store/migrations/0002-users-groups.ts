import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../db.ts';
import { instant, notNull, withId } from './helpers.ts';

export function usersGroupsMigration(dialect: Dialect) {
  return {
    async up(db: Kysely<any>) {
      const text = (table: any, name: string, fallback = '') =>
        table.addColumn(name, 'text', (c: any) => c.notNull().defaultTo(fallback));
      const flag = (table: any, name: string) =>
        table.addColumn(name, 'integer', (c: any) => c.notNull().defaultTo(0));

      let users: any = withId(db.schema.createTable('users'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('guid', 'text', (c) => c.notNull().unique())
        .addColumn('username', 'text', notNull)
        .addColumn('username_norm', 'text', notNull)
        .addColumn('email', 'text', notNull)
        .addColumn('email_norm', 'text', notNull);
      for (const name of ['first_name', 'last_name', 'phone', 'alternate_email', 'preferred_locale', 'source_identifier']) users = text(users, name);
      users = users
        .addColumn('password_hash', 'text')
        .addColumn('password_changed_at', instant)
        .addColumn('role', 'text', (c: any) => c.notNull().defaultTo('END_USER'))
        .addColumn('source_type', 'text', (c: any) => c.notNull().defaultTo('API'))
        .addColumn('second_factor_type', 'text', (c: any) => c.notNull().defaultTo('NONE'))
        .addColumn('custom_attributes', 'text', (c: any) => c.notNull().defaultTo('{}'))
        .addColumn('last_verified_at', instant, (c: any) => c.notNull().defaultTo(0))
        .addColumn('credentials_version', 'integer', (c: any) => c.notNull().defaultTo(1));
      for (const name of ['disabled', 'mark_for_deletion', 'idp_enabled', 'phone_verified', 'email_verified', 'enforce_2fa_next_login']) users = flag(users, name);
      await users
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
      await db.schema.createIndex('users_customer_username').unique().on('users').columns(['customer_id', 'username_norm']).execute();
      await db.schema.createIndex('users_customer_email').unique().on('users').columns(['customer_id', 'email_norm']).execute();
      await db.schema.createIndex('users_customer_id').on('users').columns(['customer_id', 'id']).execute();
      await db.schema.createIndex('users_customer_marked').on('users').columns(['customer_id', 'mark_for_deletion']).execute();

      await db.schema.createTable('user_id_buckets')
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('bucket', 'bigint', notNull)
        .addColumn('user_count', 'integer', notNull)
        .addPrimaryKeyConstraint('user_id_buckets_pk', ['customer_id', 'bucket'])
        .execute();

      await withId(db.schema.createTable('groups'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('name', 'text', notNull)
        .addColumn('name_norm', 'text', notNull)
        .addColumn('is_default', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_customer_default', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('attributes', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
      await db.schema.createIndex('groups_customer_name').unique().on('groups').columns(['customer_id', 'name_norm']).execute();
      // At most one default group per customer, enforced by the database under concurrency.
      await sql`create unique index groups_one_default on groups (customer_id) where is_default = 1`.execute(db);

      await withId(db.schema.createTable('group_members'), dialect)
        .addColumn('customer_id', 'bigint', (c) => c.notNull().references('customers.id').onDelete('cascade'))
        .addColumn('group_id', 'bigint', (c) => c.notNull().references('groups.id').onDelete('cascade'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
        .addColumn('attributes', 'text', (c) => c.notNull().defaultTo('[]'))
        .addColumn('created_at', instant, notNull)
        .addColumn('updated_at', instant, notNull)
        .execute();
      await db.schema.createIndex('group_members_pair').unique().on('group_members').columns(['group_id', 'user_id']).execute();
      await db.schema.createIndex('group_members_user').on('group_members').columns(['user_id']).execute();
      await db.schema.createIndex('group_members_customer').on('group_members').columns(['customer_id', 'id']).execute();
    },
  };
}
