/** Queries on `applications`; every function is scoped by customer. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { ApplicationsTable } from '../../store/schema.ts';
import type { Application, ApplicationType } from './types.ts';

function toApplication(row: Selectable<ApplicationsTable>): Application {
  return {
    id: Number(row.id),
    customerId: Number(row.customer_id),
    uuid: row.uuid,
    name: row.name,
    type: row.type as ApplicationType,
    returnUrls: JSON.parse(row.return_urls) as string[],
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    loginUrls: JSON.parse(row.login_urls) as string[],
    clientSecretSalt: row.client_secret_salt,
    clientSecretHash: row.client_secret_hash,
    createdAt: Number(row.created_at),
  };
}

export async function insertApplication(db: Executor, customerId: number, values: Omit<Application, 'id' | 'customerId'>): Promise<Application> {
  const row = await db.insertInto('applications').values({
    customer_id: customerId,
    uuid: values.uuid,
    name: values.name,
    type: values.type,
    return_urls: JSON.stringify(values.returnUrls),
    redirect_uris: JSON.stringify(values.redirectUris),
    login_urls: JSON.stringify(values.loginUrls),
    client_secret_salt: values.clientSecretSalt,
    client_secret_hash: values.clientSecretHash,
    created_at: values.createdAt,
  }).returningAll().executeTakeFirstOrThrow();
  return toApplication(row);
}

/** Creation order. */
export async function listApplications(db: Executor, customerId: number): Promise<Application[]> {
  const rows = await db.selectFrom('applications').selectAll().where('customer_id', '=', customerId).orderBy('id').execute();
  return rows.map(toApplication);
}

export async function findApplicationByUuid(db: Executor, customerId: number, uuid: string): Promise<Application | undefined> {
  const row = await db.selectFrom('applications').selectAll()
    .where('customer_id', '=', customerId).where('uuid', '=', uuid).executeTakeFirst();
  return row && toApplication(row);
}

/** Its policies (and magic links) go with it (ON DELETE CASCADE). @returns whether a row was deleted. */
export async function deleteApplication(db: Executor, customerId: number, uuid: string): Promise<boolean> {
  const result = await db.deleteFrom('applications').where('customer_id', '=', customerId).where('uuid', '=', uuid).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
