/** Queries on `applications`; every function is scoped by customer. */
import type { Selectable } from 'kysely';
import type { Executor } from '../../store/db.ts';
import type { ApplicationsTable } from '../../store/schema.ts';
import type { Application, ApplicationType, NameIdFormat } from './types.ts';

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
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    clientSecretSalt: row.client_secret_salt,
    clientSecretHash: row.client_secret_hash,
    saml: row.saml_entity_id === null ? null : {
      entityId: row.saml_entity_id,
      acsUrls: JSON.parse(row.acs_urls) as string[],
      nameIdFormat: (row.name_id_format ?? 'emailAddress') as NameIdFormat,
      sloUrl: row.slo_url,
      spCertificate: row.sp_certificate,
    },
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
    post_logout_redirect_uris: JSON.stringify(values.postLogoutRedirectUris),
    client_secret_salt: values.clientSecretSalt,
    client_secret_hash: values.clientSecretHash,
    ...samlColumns(values.saml),
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

export async function findApplicationBySamlEntityId(db: Executor, customerId: number, entityId: string): Promise<Application | undefined> {
  const row = await db.selectFrom('applications').selectAll()
    .where('customer_id', '=', customerId).where('saml_entity_id', '=', entityId).executeTakeFirst();
  return row && toApplication(row);
}

/** Its policies (and magic links) go with it (ON DELETE CASCADE). @returns whether a row was deleted. */
export async function deleteApplication(db: Executor, customerId: number, uuid: string): Promise<boolean> {
  const result = await db.deleteFrom('applications').where('customer_id', '=', customerId).where('uuid', '=', uuid).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

function samlColumns(saml: Application['saml']) {
  return {
    saml_entity_id: saml?.entityId ?? null,
    acs_urls: JSON.stringify(saml?.acsUrls ?? []),
    name_id_format: saml?.nameIdFormat ?? null,
    slo_url: saml?.sloUrl ?? null,
    sp_certificate: saml?.spCertificate ?? null,
  };
}

/** Name, URL lists and a SAML application's SP settings; type, UUID and client secret stay. @returns the row as changed, undefined when there is none. */
export async function updateApplication(db: Executor, customerId: number, uuid: string,
  values: Pick<Application, 'name' | 'returnUrls' | 'redirectUris' | 'loginUrls' | 'postLogoutRedirectUris' | 'saml'>): Promise<Application | undefined> {
  const row = await db.updateTable('applications').set({
    name: values.name,
    return_urls: JSON.stringify(values.returnUrls),
    redirect_uris: JSON.stringify(values.redirectUris),
    login_urls: JSON.stringify(values.loginUrls),
    post_logout_redirect_uris: JSON.stringify(values.postLogoutRedirectUris),
    ...samlColumns(values.saml),
  }).where('customer_id', '=', customerId).where('uuid', '=', uuid).returningAll().executeTakeFirst();
  return row && toApplication(row);
}
