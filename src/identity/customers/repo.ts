import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { CustomersTable } from '../../store/schema.ts';
import type { Customer } from './types.ts';

export interface CustomerRow extends Customer { apiKeySealed: string }

function toCustomer(row: Selectable<CustomersTable>): CustomerRow {
  return {
    id: row.id,
    customerKey: row.customer_key,
    email: row.email,
    displayName: row.display_name,
    passwordExpiryDays: row.password_expiry_days,
    createdAt: row.created_at,
    apiKeySealed: row.api_key_sealed,
  };
}

export async function insertCustomer(db: Executor, values: {
  customerKey: string; email: string; displayName: string; apiKeySealed: string; passwordHash: string | null; now: number;
}): Promise<number> {
  const row = await db.insertInto('customers').values({
    customer_key: values.customerKey,
    email: values.email,
    display_name: values.displayName,
    api_key_sealed: values.apiKeySealed,
    password_hash: values.passwordHash,
    password_expiry_days: null,
    created_at: values.now,
    updated_at: values.now,
  }).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

export async function findCustomerByKey(db: Executor, customerKey: string): Promise<CustomerRow | undefined> {
  const row = await db.selectFrom('customers').selectAll().where('customer_key', '=', customerKey).executeTakeFirst();
  return row && toCustomer(row);
}

export async function listCustomers(db: Executor, limit: number): Promise<CustomerRow[]> {
  const rows = await db.selectFrom('customers').selectAll().orderBy('id').limit(limit).execute();
  return rows.map(toCustomer);
}

export async function updateCustomerSettings(db: Executor, id: number, values: {
  apiKeySealed?: string; passwordExpiryDays?: number | null; displayName?: string; now: number;
}): Promise<void> {
  await db.updateTable('customers').set({
    ...(values.apiKeySealed !== undefined ? { api_key_sealed: values.apiKeySealed } : {}),
    ...(values.passwordExpiryDays !== undefined ? { password_expiry_days: values.passwordExpiryDays } : {}),
    ...(values.displayName !== undefined ? { display_name: values.displayName } : {}),
    updated_at: values.now,
  }).where('id', '=', id).execute();
}
