/** Queries on `login_policies` (joined to `applications` for the UUID); every function is scoped by customer. */
import type { Executor } from '../../store/db.ts';
import type { FirstFactor, LoginPolicy, SecondFactor } from './types.ts';

/** Group names match as group names do: trimmed, case-insensitive. '' stands for "no group". */
export const normaliseGroupName = (name: string | null): string => (name ?? '').trim().toLowerCase();

interface PolicyRow {
  id: number | string;
  customer_id: number | string;
  application_id: number | string;
  application_uuid: string;
  first_factor: string;
  second_factor: string;
  group_name: string | null;
  created_at: number | string;
}

function toPolicy(row: PolicyRow): LoginPolicy {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    applicationId: Number(row.application_id),
    applicationUuid: row.application_uuid,
    firstFactor: row.first_factor as FirstFactor,
    secondFactor: row.second_factor as SecondFactor,
    groupName: row.group_name,
    createdAt: Number(row.created_at),
  };
}

function selectPolicies(db: Executor, customerId: number) {
  return db.selectFrom('login_policies')
    .innerJoin('applications', 'applications.id', 'login_policies.application_id')
    .select([
      'login_policies.id', 'login_policies.customer_id', 'login_policies.application_id', 'applications.uuid as application_uuid',
      'login_policies.first_factor', 'login_policies.second_factor', 'login_policies.group_name', 'login_policies.created_at',
    ])
    .where('login_policies.customer_id', '=', customerId);
}

/** @throws the store's unique violation when the application already has a policy for this group (or none). */
export async function insertPolicy(db: Executor, customerId: number, values: {
  applicationId: number; firstFactor: FirstFactor; secondFactor: SecondFactor; groupName: string | null; now: number;
}): Promise<number> {
  const row = await db.insertInto('login_policies').values({
    customer_id: customerId,
    application_id: values.applicationId,
    first_factor: values.firstFactor,
    second_factor: values.secondFactor,
    group_name: values.groupName,
    group_name_norm: normaliseGroupName(values.groupName),
    created_at: values.now,
  }).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export async function findPolicyById(db: Executor, customerId: number, id: number): Promise<LoginPolicy | undefined> {
  const row = await selectPolicies(db, customerId).where('login_policies.id', '=', id).executeTakeFirst();
  return row && toPolicy(row);
}

/** Creation order. */
export async function listPolicies(db: Executor, customerId: number): Promise<LoginPolicy[]> {
  return (await selectPolicies(db, customerId).orderBy('login_policies.id').execute()).map(toPolicy);
}

/** Every policy of the application, oldest first (an application has a handful). */
export async function findApplicationPolicies(db: Executor, customerId: number, applicationId: number): Promise<LoginPolicy[]> {
  const rows = await selectPolicies(db, customerId)
    .where('login_policies.application_id', '=', applicationId)
    .orderBy('login_policies.id')
    .execute();
  return rows.map(toPolicy);
}

/** @returns whether a row was deleted. */
export async function deletePolicy(db: Executor, customerId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('login_policies').where('customer_id', '=', customerId).where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Across customers (the start's check of the public URL): whether any policy asks for a passkey. */
export async function anyAsksForPasskeys(db: Executor): Promise<boolean> {
  const row = await db.selectFrom('login_policies').select('id')
    .where((eb) => eb.or([eb('first_factor', '=', 'PASSKEY'), eb('second_factor', 'in', ['PASSKEY', 'ANY'])]))
    .limit(1).executeTakeFirst();
  return row !== undefined;
}
