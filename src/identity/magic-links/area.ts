/**
 * The magic-link feature as one piece for compose.ts: the mail outbox and its worker, the service,
 * the OAuth token service, the admin area, the landing and POST /oauth/token, and the bearer
 * authenticator the admin API consults on the magic-link routes.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import type { Sealer } from '../../lib/seal.ts';
import { createOutbox, type Outbox } from '../../mail/outbox.ts';
import { createMailTransport } from '../../mail/transports/choose.ts';
import { createMailWorker, type MailLogger, type MailWorker } from '../../mail/worker.ts';
import type { Dialect } from '../../store/db.ts';
import type { Database } from '../../store/schema.ts';
import type { ThrottleStore } from '../../store/throttles/types.ts';
import type { ApplicationServices } from '../applications/area.ts';
import type { MfaService } from '../mfa/service.ts';
import { oauthTokenPlugin } from '../oauth-token/routes.ts';
import { createOauthTokenService, type OauthTokenService } from '../oauth-token/service.ts';
import type { SigningKeysService } from '../signing-keys/service.ts';
import type { UsersService } from '../users/service.ts';
import { landingPlugin } from './landing/routes.ts';
import { magicLinksArea } from './routes.ts';
import { magicLinkPurgeJob } from './purge.ts';
import { createMagicLinksService, type MagicLinksService } from './service.ts';
import type { ClusterJob } from '../../store/cluster-jobs.ts';

export interface MagicLinkParts {
  magicLinks: MagicLinksService;
  oauthTokens: OauthTokenService;
  outbox: Outbox;
  /** Drains the outbox; the server starts it (a BackgroundTask), tests call runOnce(). */
  mailWorker: MailWorker;
  /** Deletes old links, expired logins and tokens, old mails (purge.ts); the server starts it, once per cluster. */
  purge: ClusterJob;
  area: (app: FastifyInstance) => Promise<void>;
  /** The landing and POST /oauth/token, outside /api. */
  plugins: ((app: FastifyInstance) => Promise<void>)[];
  /** Closes the mail transport (the SMTP pool's sockets). */
  closeMail(): void;
  bearer: { authenticate(authorization: string, scope: string): Promise<import('../customers/types.ts').Customer> };
}

export interface MagicLinkPartsDeps extends ApplicationServices {
  db: Kysely<Database>;
  /** Where the per-user generate cap counts (the database, or Redis when configured). */
  throttles: ThrottleStore;
  dialect: Dialect;
  clock: Clock;
  sealer: Sealer;
  publicUrl: string;
  dataDir: string;
  smtpUrl?: string;
  /** LATCHKEY_MAIL_FROM; default `Latchkey <no-reply@<public URL host>>`. */
  mailFrom?: string;
  mailLogger?: MailLogger;
  /** Lifetime of /oauth/token access tokens (default 3600). */
  accessTokenTtlSeconds?: number;
  users: UsersService;
  mfa: MfaService;
  signingKeys: Pick<SigningKeysService, 'signJwt'>;
  oidc: {
    customerIssuer(customerKey: string): string;
    beginProviderLogin(reply: FastifyReply, login: { customerId: number; userId: number; applicationUuid: string; amr: string[] }): Promise<void>;
  };
}

export function createMagicLinkParts(deps: MagicLinkPartsDeps): MagicLinkParts {
  const host = new URL(deps.publicUrl).hostname;
  const outbox = createOutbox({ sealer: deps.sealer, clock: deps.clock, messageIdDomain: host });
  const transport = createMailTransport({ smtpUrl: deps.smtpUrl, dataDir: deps.dataDir, clock: deps.clock });
  const mailWorker = createMailWorker({
    db: deps.db, dialect: deps.dialect, sealer: deps.sealer, clock: deps.clock, transport,
    from: deps.mailFrom ?? `Latchkey <no-reply@${host.includes('.') ? host : `${host}.invalid`}>`,
    logger: deps.mailLogger,
  });
  const magicLinks = createMagicLinksService({
    db: deps.db,
    throttles: deps.throttles,
    clock: deps.clock,
    publicUrl: deps.publicUrl,
    users: deps.users,
    applications: deps.applications,
    policies: deps.policies,
    mfa: deps.mfa,
    outbox,
    mailEnqueued: () => mailWorker.kick(),
    signJwt: (customerId, claims, options) => deps.signingKeys.signJwt(customerId, claims, options),
    issuer: (customerKey) => deps.oidc.customerIssuer(customerKey),
  });
  const oauthTokens = createOauthTokenService({ db: deps.db, clock: deps.clock, oauthClients: deps.oauthClients, ttlSeconds: deps.accessTokenTtlSeconds });
  return {
    magicLinks,
    oauthTokens,
    outbox,
    mailWorker,
    purge: magicLinkPurgeJob({
      db: deps.db,
      clock: deps.clock,
      onError: (error) => process.stderr.write(`latchkey: magic-link purge failed: ${(error as Error).message ?? error}\n`),
    }),
    area: magicLinksArea(magicLinks),
    plugins: [
      landingPlugin({ magicLinks, publicUrl: deps.publicUrl, beginProviderLogin: (reply, login) => deps.oidc.beginProviderLogin(reply, login) }),
      oauthTokenPlugin(oauthTokens),
    ],
    bearer: oauthTokens,
    closeMail: () => transport.close(),
  };
}
