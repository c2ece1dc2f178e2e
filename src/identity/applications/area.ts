/**
 * The applications extension as one piece for compose.ts: its three services (applications, login
 * policies, OAuth clients) and their admin API areas.
 */
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import type { ChangeFeed } from '../../store/changes.ts';
import type { Database } from '../../store/schema.ts';
import { oauthClientsArea } from '../oauth-clients/routes.ts';
import { createOauthClientsService, type OauthClientsService } from '../oauth-clients/service.ts';
import { policiesArea } from '../policies/routes.ts';
import { createPoliciesService, type PoliciesService } from '../policies/service.ts';
import { applicationsArea } from './routes.ts';
import { createApplicationsService, type ApplicationsService } from './service.ts';

export interface ApplicationServices {
  applications: ApplicationsService;
  policies: PoliciesService;
  oauthClients: OauthClientsService;
}

/** @param masterKey derives OAUTH applications' client secrets (see client-secret.ts). */
export function createApplicationServices(deps: { db: Kysely<Database>; clock: Clock; masterKey: Buffer; changes?: ChangeFeed }): ApplicationServices {
  const applications = createApplicationsService(deps);
  return {
    applications,
    policies: createPoliciesService({ db: deps.db, clock: deps.clock, applications, changes: deps.changes }),
    oauthClients: createOauthClientsService({ db: deps.db, clock: deps.clock }),
  };
}

/** The routes of the three, as `areas` entries of the admin API. */
export function applicationAreas(services: ApplicationServices): ((app: FastifyInstance) => Promise<void>)[] {
  return [applicationsArea(services.applications), policiesArea(services.policies), oauthClientsArea(services.oauthClients)];
}
