/**
 * Applications: create (with the OAUTH client secret shown once), list, delete, and the lookups the
 * magic-link routes and the OpenID provider use. Type rules: a JWT application needs returnUrls, an
 * OAUTH one redirectUris (loginUrls optional); a list that another type uses must be empty.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import { Invalid, NotFound } from '../../lib/errors.ts';
import { sha256Hex } from '../../lib/tokens.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import type { Executor } from '../../store/db.ts';
import { createReadCache } from '../../store/read-cache.ts';
import type { Database } from '../../store/schema.ts';
import { deriveClientSecret, newClientSecretSalt } from './client-secret.ts';
import * as repo from './repo.ts';
import type { Application, ApplicationInput, ApplicationType, CreatedApplication } from './types.ts';
import { checkUrlList } from './urls.ts';

export const APPLICATION_NOT_FOUND = 'The application does not exist.';

type UrlList = 'returnUrls' | 'redirectUris' | 'loginUrls';

/** Which lists each type uses, and which of them must hold at least one URL. */
const LISTS: Record<ApplicationType, { uses: UrlList[]; requires: UrlList[] }> = {
  JWT: { uses: ['returnUrls'], requires: ['returnUrls'] },
  OAUTH: { uses: ['redirectUris', 'loginUrls'], requires: ['redirectUris'] },
  SAML: { uses: [], requires: [] },
};

export interface ApplicationsService {
  /** @throws Invalid naming the field (type rules, URL rules). */
  create(customerId: number, input: ApplicationInput): Promise<CreatedApplication>;
  list(customerId: number): Promise<Application[]>;
  /** Deletes it with its policies and magic links. @throws NotFound for an unknown UUID. */
  delete(customerId: number, uuid: string): Promise<void>;
  /** The customer's application, or undefined (another customer's UUID included). */
  findByUuid(db: Executor, customerId: number, uuid: string): Promise<Application | undefined>;
  /** @throws NotFound with the spec's text for an unknown UUID. */
  getByUuid(db: Executor, customerId: number, uuid: string): Promise<Application>;
  /** An OAUTH application's client secret, recomputed (for the OpenID provider); undefined for other types. */
  applicationClientSecret(app: Application): string | undefined;
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
export function createApplicationsService(deps: { db: Kysely<Database>; clock: Clock; masterKey: Buffer; changes?: ChangeFeed }): ApplicationsService {
  const { db, clock, masterKey } = deps;
  // Every magic-link generate and landing reads its application; applications change rarely.
  const byUuid = createReadCache<Application>(deps.changes, { tables: ['applications'], maxEntries: 1_000 });

  function checkLists(input: ApplicationInput): Record<UrlList, string[]> {
    const rule = LISTS[input.type];
    const lists = {} as Record<UrlList, string[]>;
    for (const field of ['returnUrls', 'redirectUris', 'loginUrls'] as const) {
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

  /** Read through the cache, except in a transaction (which reads its own snapshot). */
  async function findByUuid(exec: Executor, customerId: number, uuid: string): Promise<Application | undefined> {
    const normalised = normaliseUuid(uuid);
    const load = () => repo.findApplicationByUuid(exec, customerId, normalised);
    return exec === db ? byUuid.read(`${customerId}:${normalised}`, load) : load();
  }

  return {
    async create(customerId, input) {
      const name = input.name.trim();
      if (name.length === 0) throw new Invalid('name', 'must not be empty');
      const lists = checkLists(input);
      const uuid = randomUUID();
      let clientSecret: string | undefined;
      let clientSecretSalt: string | null = null;
      if (input.type === 'OAUTH') {
        clientSecretSalt = newClientSecretSalt();
        clientSecret = deriveClientSecret(masterKey, uuid, clientSecretSalt);
      }
      const application = await repo.insertApplication(db, customerId, {
        uuid, name, type: input.type, ...lists,
        clientSecretSalt,
        clientSecretHash: clientSecret === undefined ? null : sha256Hex(clientSecret),
        createdAt: clock.now(),
      });
      return clientSecret === undefined ? { application } : { application, clientSecret };
    },

    list: (customerId) => repo.listApplications(db, customerId),

    async delete(customerId, uuid) {
      if (!await repo.deleteApplication(db, customerId, normaliseUuid(uuid))) throw new NotFound('application', APPLICATION_NOT_FOUND);
    },

    findByUuid,

    async getByUuid(exec, customerId, uuid) {
      const app = await findByUuid(exec, customerId, uuid);
      if (!app) throw new NotFound('application', APPLICATION_NOT_FOUND);
      return app;
    },

    applicationClientSecret(app) {
      if (app.type !== 'OAUTH' || app.clientSecretSalt === null) return undefined;
      return deriveClientSecret(masterKey, app.uuid, app.clientSecretSalt);
    },
  };
}
