/**
 * Applications: create (with the OAUTH client secret shown once), list, delete, and the lookups the
 * magic-link routes, the OpenID provider and the SAML identity provider use. Type rules: a JWT
 * application needs returnUrls, an OAUTH one redirectUris (loginUrls and postLogoutRedirectUris
 * optional), a SAML one its service provider's settings (saml-rules.ts; the entity ID unique per
 * customer); a list or setting that another type uses must be empty.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AuditContext } from '../../audit/context.ts';
import type { AuditRecorder } from '../../audit/service.ts';
import { applicationTarget } from '../../audit/targets.ts';
import type { Clock } from '../../lib/clock.ts';
import { Conflict, Invalid, NotFound } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import { isUniqueViolation, type Executor } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import { deriveClientSecret, newClientSecretSalt } from './client-secret.ts';
import { enforce, type BrokenRule } from '../../lib/text-rules.ts';
import * as repo from './repo.ts';
import { checkApplicationName } from './rules.ts';
import { readSamlServiceProvider } from './saml-rules.ts';
import type { Application, ApplicationInput, ApplicationType, CreatedApplication, SamlServiceProvider } from './types.ts';
import { checkUrlList } from './urls.ts';

export const APPLICATION_NOT_FOUND = 'The application does not exist.';

const entityIdTaken = () => new Conflict('application_exists', { field: 'entityId' }, 'an application with this entityId already exists');

export type UrlList = 'returnUrls' | 'redirectUris' | 'loginUrls' | 'postLogoutRedirectUris';

/** Every URL list, in the order the rules check them. */
export const URL_LISTS: readonly UrlList[] = ['returnUrls', 'redirectUris', 'loginUrls', 'postLogoutRedirectUris'];

/** Which lists each type uses, and which of them must hold at least one URL. */
const LISTS: Record<ApplicationType, { uses: UrlList[]; requires: UrlList[] }> = {
  JWT: { uses: ['returnUrls'], requires: ['returnUrls'] },
  OAUTH: { uses: ['redirectUris', 'loginUrls', 'postLogoutRedirectUris'], requires: ['redirectUris'] },
  SAML: { uses: [], requires: [] },
};

export interface ApplicationsService {
  /** @throws Invalid naming the field (type rules, URL rules, SAML settings); Conflict for a SAML entityId the customer already has. */
  create(customerId: number, input: ApplicationInput, context: AuditContext): Promise<CreatedApplication>;
  list(customerId: number): Promise<Application[]>;
  /** Deletes it with its policies and magic links. @throws NotFound for an unknown UUID. */
  delete(customerId: number, uuid: string, context: AuditContext): Promise<void>;
  /** The customer's application, or undefined (another customer's UUID included). */
  findByUuid(db: Executor, customerId: number, uuid: string): Promise<Application | undefined>;
  /** @throws NotFound with the spec's text for an unknown UUID. */
  getByUuid(db: Executor, customerId: number, uuid: string): Promise<Application>;
  /** getByUuid outside a transaction (the console's pages). @throws NotFound with the spec's text for an unknown UUID. */
  get(customerId: number, uuid: string): Promise<Application>;
  /** The customer's SAML application whose SP has this entity ID (an AuthnRequest's Issuer), or undefined. */
  findBySamlEntityId(customerId: number, entityId: string): Promise<Application | undefined>;
  /** An OAUTH application's client secret, recomputed (for the OpenID provider); undefined for other types. */
  applicationClientSecret(app: Application): string | undefined;
  /**
   * Changes an application's name and URL lists or, for a SAML one, its service provider's settings (its
   * type stays); they follow create's rules.
   * @throws NotFound for an unknown UUID; Invalid naming the first broken rule (findApplicationProblems lists them all); Conflict for an entityId another application has.
   */
  update(customerId: number, uuid: string, input: Omit<ApplicationInput, 'type'>, context: AuditContext): Promise<Application>;
}

/** The URL lists a type uses, and which of them must hold a URL (the forms show these and no others). */
export function applicationLists(type: ApplicationType): { uses: readonly UrlList[]; requires: readonly UrlList[] } {
  return LISTS[type];
}

/**
 * Every rule `input` breaks, in the order create and update check them (name, each list, then the SAML
 * settings): a form shows them all at once, beside their fields; the first is what create and update
 * throw. The entity ID's uniqueness is not among them (create and update check it against the database).
 */
export function findApplicationProblems(input: ApplicationInput): BrokenRule[] {
  const problems: BrokenRule[] = [];
  const name = checkApplicationName(input.name);
  if (name) problems.push(name);
  const rule = LISTS[input.type];
  for (const field of URL_LISTS) {
    const urls = input[field] ?? [];
    if (!rule.uses.includes(field) && urls.length > 0) {
      const users = (Object.keys(LISTS) as ApplicationType[]).filter((t) => LISTS[t].uses.includes(field));
      problems.push({ field, reason: `is only for ${users.join(' and ')} applications` });
    } else if (rule.requires.includes(field) && urls.length === 0) {
      problems.push({ field, reason: `must hold at least one URL for ${input.type} applications` });
    } else {
      try { checkUrlList(field, urls); } catch (error) {
        if (!(error instanceof Invalid)) throw error;
        problems.push({ field: error.field, reason: error.message.slice(error.field.length + 1) });
      }
    }
  }
  problems.push(...readSamlServiceProvider(input).problems);
  return problems;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * UUIDs are compared in lower case (they are issued so).
 * @throws Invalid when `uuid` is not a UUID.
 */
export function normaliseUuid(uuid: string, field = 'applicationUuid'): string {
  if (!UUID.test(uuid)) throw new Invalid(field, 'must be a UUID');
  return uuid.toLowerCase();
}

/** @param changes undefined: nothing is kept in memory (LATCHKEY_READ_CACHE=false). */
/** What an update can change, as one comparable string: equal before and after means no event. */
const settingsOf = (app: Application): string => JSON.stringify([app.name, app.returnUrls, app.redirectUris, app.loginUrls, app.postLogoutRedirectUris, app.saml]);

export function createApplicationsService(deps: { db: Kysely<Database>; clock: Clock; masterKey: Buffer; audit: AuditRecorder; changes?: ChangeFeed }): ApplicationsService {
  const { db, clock, masterKey, audit } = deps;
  // Every magic-link generate and landing reads its application; applications change rarely.
  const byUuid = createReadCache<Application>(deps.changes, { tables: ['applications'], maxEntries: 1_000, clock });

  function checkLists(input: ApplicationInput): Record<UrlList, string[]> {
    const rule = LISTS[input.type];
    const lists = {} as Record<UrlList, string[]>;
    for (const field of URL_LISTS) {
      const urls = input[field] ?? [];
      if (!rule.uses.includes(field) && urls.length > 0) {
        const users = (Object.keys(LISTS) as ApplicationType[]).filter((t) => LISTS[t].uses.includes(field));
        throw new Invalid(field, `is only for ${users.join(' and ')} applications`);
      }
      if (rule.requires.includes(field) && urls.length === 0) throw new Invalid(field, `must hold at least one URL for ${input.type} applications`);
      lists[field] = checkUrlList(field, urls);
    }
    return lists;
  }

  /** @throws Invalid naming the first broken rule. @returns the SAML application's SP, null for the other types. */
  function checkSaml(input: ApplicationInput): SamlServiceProvider | null {
    const { saml, problems: [first] } = readSamlServiceProvider(input);
    if (first) throw new Invalid(first.field, first.reason);
    return saml;
  }

  /** Two writes of one entity ID at once pass the check before the write; the unique index refuses the later: the same 409. */
  function uniqueEntityId(error: unknown): never {
    throw isUniqueViolation(error) ? entityIdTaken() : error;
  }

  /** Read through the cache, except in a transaction (which reads its own snapshot). */
  async function findByUuid(exec: Executor, customerId: number, uuid: string): Promise<Application | undefined> {
    const normalised = normaliseUuid(uuid);
    const load = () => repo.findApplicationByUuid(exec, customerId, normalised);
    return exec === db ? byUuid.read(`${customerId}:${normalised}`, load) : load();
  }

  return {
    async create(customerId, input, context) {
      enforce(checkApplicationName(input.name));
      const name = input.name;
      const lists = checkLists(input);
      const saml = checkSaml(input);
      if (saml && await repo.findApplicationBySamlEntityId(db, customerId, saml.entityId)) throw entityIdTaken();
      const uuid = randomUUID();
      let clientSecret: string | undefined;
      let clientSecretSalt: string | null = null;
      if (input.type === 'OAUTH') {
        clientSecretSalt = newClientSecretSalt();
        clientSecret = deriveClientSecret(masterKey, uuid, clientSecretSalt);
      }
      const application = await db.transaction().execute(async (trx) => {
        const inserted = await repo.insertApplication(trx, customerId, {
          uuid, name, type: input.type, ...lists,
          clientSecretSalt,
          clientSecretHash: clientSecret === undefined ? null : sha256Hex(clientSecret),
          saml,
          createdAt: clock.now(),
        });
        await audit.record(trx, customerId, { action: 'application.created', target: applicationTarget(inserted) }, context);
        return inserted;
      }).catch(uniqueEntityId);
      return clientSecret === undefined ? { application } : { application, clientSecret };
    },

    list: (customerId) => repo.listApplications(db, customerId),

    async delete(customerId, uuid, context) {
      await db.transaction().execute(async (trx) => {
        const application = await repo.findApplicationByUuid(trx, customerId, normaliseUuid(uuid));
        if (!application || !await repo.deleteApplication(trx, customerId, application.uuid)) throw new NotFound('application', APPLICATION_NOT_FOUND);
        await audit.record(trx, customerId, { action: 'application.deleted', target: applicationTarget(application) }, context);
      });
    },

    findByUuid,

    async getByUuid(exec, customerId, uuid) {
      const app = await findByUuid(exec, customerId, uuid);
      if (!app) throw new NotFound('application', APPLICATION_NOT_FOUND);
      return app;
    },

    async get(customerId, uuid) {
      const app = await findByUuid(db, customerId, uuid);
      if (!app) throw new NotFound('application', APPLICATION_NOT_FOUND);
      return app;
    },

    async update(customerId, uuid, input, context) {
      const current = await findByUuid(db, customerId, uuid);
      if (!current) throw new NotFound('application', APPLICATION_NOT_FOUND);
      const [first] = findApplicationProblems({ ...input, type: current.type });
      if (first) throw new Invalid(first.field, first.reason);
      const lists = checkLists({ ...input, type: current.type });
      const saml = checkSaml({ ...input, type: current.type });
      if (saml) {
        const holder = await repo.findApplicationBySamlEntityId(db, customerId, saml.entityId);
        if (holder && holder.id !== current.id) throw entityIdTaken();
      }
      return db.transaction().execute(async (trx) => {
        const updated = await repo.updateApplication(trx, customerId, current.uuid, { name: input.name, ...lists, saml });
        if (!updated) throw new NotFound('application', APPLICATION_NOT_FOUND);
        if (settingsOf(updated) !== settingsOf(current)) await audit.record(trx, customerId, { action: 'application.updated', target: applicationTarget(updated) }, context);
        return updated;
      }).catch(uniqueEntityId);
    },

    findBySamlEntityId: (customerId, entityId) => repo.findApplicationBySamlEntityId(db, customerId, entityId),

    applicationClientSecret(app) {
      if (app.type !== 'OAUTH' || app.clientSecretSalt === null) return undefined;
      return deriveClientSecret(masterKey, app.uuid, app.clientSecretSalt);
    },
  };
}
