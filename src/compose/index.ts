/**
 * Builds every service from Config and a store, once: the one wiring diagram (mail.ts, identity.ts,
 * site.ts build their parts), used by the server, the CLI and the tests alike. The faces only mount
 * what they are handed; the background work (mail worker, purges, replay-guard expiry) is listed here.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { createMetricsRegistry, type MetricsRegistry } from '../http/metrics.ts';
import { installRateLimits } from '../http/rate-limit.ts';
import { createAdminAuthenticator } from '../identity/admin-auth.ts';
import { createDatabaseReplayGuard, createRedisReplayGuard, createReplayGuard } from '../identity/replay-guard.ts';
import { systemClock, type Clock } from '../lib/clock.ts';
import type { MailWorker } from '../mail/worker.ts';
import type { OutboxWorker } from '../outbox/worker.ts';
import { createSealer } from '../lib/seal.ts';
import { clusterJob, type ClusterJob } from '../store/cluster-jobs.ts';
import { createStore, type Store } from '../store/db.ts';
import { createRedis } from '../store/redis.ts';
import { createDatabaseThrottleStore } from '../store/throttles/database.ts';
import { createRedisThrottleStore } from '../store/throttles/redis.ts';
import type { ThrottleStore } from '../store/throttles/types.ts';
import { migrate } from '../store/migrations/migrate.ts';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../store/private-files.ts';
import { composeIdentity, type IdentityServices } from './identity.ts';
import { composeMail } from './mail.ts';
import { composeSite, composeSiteServices, type SiteAppOverrides, type SiteServices } from './site.ts';

/** `<issuer>/forgot` and `<issuer>/reset/<token>` (any case: a mistyped path still counts). */
const FORGOTTEN_PASSWORD_PAGES = /^\/customers\/[^/]+\/(?:forgot$|reset\/)/i;

export interface Services extends IdentityServices, SiteServices {}

export interface Composition {
  config: Config;
  clock: Clock;
  store: Store;
  masterKey: Buffer;
  services: Services;
  buildIdentityApp(): Promise<FastifyInstance>;
  /**
   * The content site, bound to config.site.customerKey (or `overrides.customerKey`, or the customer
   * it recorded, or the only customer). When it cannot tell, every route answers 503 with the reason.
   */
  buildSiteApp(overrides?: SiteAppOverrides): Promise<FastifyInstance>;
  /** Both faces count their requests here. */
  metrics: MetricsRegistry;
  /** The management interface: metrics of both faces, health, and readiness with reasons. */
  buildManagementApp(opts?: { siteNotReady?: () => string | undefined }): Promise<FastifyInstance>;
  /**
   * @throws MasterKeyMismatch when the database's sealed secrets do not open under this node's
   *   master key (a node started without the key of the node that created the database).
   */
  checkMasterKey(): Promise<void>;
  /** Periodic jobs the server starts after listening and stops before closing the store. */
  background: BackgroundTask[];
  /** Drains the mail outbox (also in `background`); tests run batches with runOnce(). */
  mailWorker: MailWorker;
  /** The magic-link purge (also in `background`). */
  magicLinkPurge: BackgroundTask;
  /** Delivers webhooks (also in `background`); tests run batches with runOnce(). */
  webhookWorker: OutboxWorker;
  /** The audit log's retention purge (also in `background`); tests tick it. */
  auditPurge: ClusterJob;
  close(): Promise<void>;
}

export interface BackgroundTask {
  start(): void;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/** A synchronous job every `intervalMs` on this node while started; its timer never keeps the process alive. */
function intervalTask(intervalMs: number, run: () => void): BackgroundTask {
  let timer: NodeJS.Timeout | undefined;
  return {
    start() { timer ??= setInterval(run, intervalMs).unref(); },
    async stop() { clearInterval(timer); timer = undefined; },
  };
}

/** The message says which key is missing and how to share it. */
export class MasterKeyMismatch extends Error {}

/** The master key from config (hex or base64 of 32 bytes), else <dataDir>/master.key, created once. */
export function resolveMasterKey(config: Config): Buffer {
  const decode = (text: string): Buffer => {
    const trimmed = text.trim();
    const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
    if (key.length !== 32) throw new Error('the master key must be 32 bytes, hex or base64');
    return key;
  };
  if (config.masterKey) return decode(config.masterKey);
  const path = join(config.dataDir, 'master.key');
  makePrivateDir(config.dataDir);
  try {
    // 'wx': two processes starting together must not each write a different key.
    writeFileSync(path, randomBytes(32).toString('base64') + '\n', { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return decode(readFileSync(path, 'utf8'));
}

export async function compose(
  config: Config,
  // logStream: tests read the identity face's JSON log lines from it.
  overrides: { clock?: Clock; store?: Store; logStream?: { write(line: string): void } } = {},
): Promise<Composition> {
  const clock = overrides.clock ?? systemClock;
  // The change feed's loss and return, for the operator: while lost, every read goes to the database.
  const store = overrides.store ?? await createStore(config.databaseUrl, {
    onChangeFeed: (state) => process.stderr.write(state === 'lost'
      ? 'latchkey: change feed lost (no heartbeat for 3 s): reads are not served from memory until it is back\n'
      : 'latchkey: change feed back: reads are served from memory again\n'),
  });
  await migrate(store);
  const masterKey = resolveMasterKey(config);
  const sealer = createSealer(masterKey);
  const { db } = store;
  const changes = config.readCache ? store.changes : undefined;

  const reportError = (what: string) => (error: unknown) => process.stderr.write(`latchkey: ${what}: ${(error as Error).message ?? error}\n`);
  // Shared by every node of the cluster: the replay guard and the rate limits' counters.
  const redis = config.redisUrl ? await createRedis(config.redisUrl, reportError('Redis')) : undefined;
  // Every login throttle (token endpoint, API-token password form, console sign-in, magic-link generates per user) counts where the
  // nodes meet: Redis when configured (keys expire by themselves), else the database table.
  const throttles: ThrottleStore = redis ? createRedisThrottleStore({ redis }) : createDatabaseThrottleStore({ db });
  const mail = composeMail({
    db, dialect: store.dialect, clock, sealer,
    publicUrl: config.publicUrl, dataDir: config.dataDir, smtpUrl: config.smtpUrl, mailFrom: config.mailFrom,
  });
  const identity = composeIdentity({ config, db, clock, sealer, masterKey, changes, throttles, mail, dialect: store.dialect });
  const { customers, users, audit } = identity.services;
  const site = composeSiteServices({ config, db, clock, changes, users, audit });
  const services: Services = { ...identity.services, ...site.services };
  const metrics = createMetricsRegistry();

  const guardOptions = { clock, graceMs: config.admin.replayGraceMs, windowMs: config.admin.clockSkewMs };
  // The guard lives where the nodes meet: Redis when configured, else PostgreSQL (one statement per
  // event-loop turn). A SQLite file is one node's store, so there the guard stays in that node's memory and
  // signed requests pay no write.
  const sharedGuard = !config.admin.replayGuard ? undefined
    : redis ? createRedisReplayGuard({ ...guardOptions, redis })
      : store.dialect === 'postgres' ? createDatabaseReplayGuard({ ...guardOptions, db }) : undefined;
  const memoryGuard = config.admin.replayGuard && !sharedGuard ? createReplayGuard({
    ...guardOptions,
    maxEntries: config.admin.replayMaxEntries,
    onShareFull: (customerId, held, total) => process.stderr.write(`latchkey: replay guard: customer ${customerId} holds its whole share (${held} of ${total} live triples, capacity ${config.admin.replayMaxEntries}); its new signed requests are refused until they leave the window\n`),
  }) : undefined;
  const replayGuard = sharedGuard ?? memoryGuard;
  const authenticator = createAdminAuthenticator({ customers, clock, clockSkewMs: config.admin.clockSkewMs, replayGuard });
  // The database guard's expired triples, deleted in batches by one node of the cluster (Redis
  // expires its own); the memory guard sweeps as requests come, and this gives an idle node's memory back.
  const replayExpiry = sharedGuard && !redis ? clusterJob({
    db, clock, name: 'admin-replay-guard-expiry', intervalMs: 30_000,
    run: () => sharedGuard.purgeExpired(),
    onError: reportError('replay guard expiry failed'),
  }) : memoryGuard && intervalTask(30_000, () => memoryGuard.sweep());

  const limits = config.rateLimits;
  const identityLimits = (app: FastifyInstance) => installRateLimits(app, { redis, families: [
    { name: 'admin', limit: limits.admin, matches: (path) => path.startsWith('/api/') || path.startsWith('/moas/api/') },
    // The person-facing link pages share the landing's budget: the magic-link landing and the forgotten-password pages.
    { name: 'landing', limit: limits.landing, matches: (path) => path.startsWith('/magic/') || FORGOTTEN_PASSWORD_PAGES.test(path) },
    { name: 'oauth-token', limit: limits.oauthToken, matches: (path) => path === '/oauth/token' },
  ] });
  const siteLimits = async (app: FastifyInstance) => {
    const { TOKEN_PATH } = await import('../site/token/routes.ts');
    return installRateLimits(app, { redis, families: [
      { name: 'site-token', limit: limits.siteToken, matches: (path) => path === TOKEN_PATH },
      { name: 'site', limit: limits.site, matches: (path) => path.startsWith('/cms-json/') },
    ] });
  };

  const apiTokenPurge = site.apiTokenPurge;

  return {
    config,
    clock,
    store,
    masterKey,
    services,
    background: replayExpiry
      ? [apiTokenPurge, replayExpiry, mail.worker, identity.webhookWorker, identity.magicLinkPurge, identity.samlPurge, identity.auditPurge]
      : [apiTokenPurge, mail.worker, identity.webhookWorker, identity.magicLinkPurge, identity.samlPurge, identity.auditPurge],
    mailWorker: mail.worker,
    magicLinkPurge: identity.magicLinkPurge,
    webhookWorker: identity.webhookWorker,
    auditPurge: identity.auditPurge,
    metrics,
    async checkMasterKey() {
      if (await customers.opensSealedKeys()) return;
      const file = join(config.dataDir, 'master.key');
      throw new MasterKeyMismatch(config.masterKey
        ? 'the master key in LATCHKEY_MASTER_KEY does not open this database\'s secrets: set LATCHKEY_MASTER_KEY to the master key of the node that created the database'
        : `the master key does not open this database's secrets: set LATCHKEY_MASTER_KEY (or copy master.key from the data directory of the node that created the database to ${file}) to that node's key`);
    },
    // The faces' modules are loaded when a face is built, not with the services: a CLI command uses
    // the services alone, and would otherwise load Fastify, its plugins and every route set
    // (decisions.md, "Operations", has the figures).
    buildManagementApp: async (opts = {}) => (await import('../http/management.ts')).buildManagementApp({
      logLevel: config.logLevel,
      logStream: overrides.logStream,
      metrics,
      ping: store.ping,
      ...(redis ? { pingRedis: () => redis.ping() } : {}),
      siteNotReady: opts.siteNotReady,
    }),
    buildIdentityApp: async () => {
      const [{ buildIdentityApp }, { adminAreas, identityPlugins }] = await Promise.all([import('../identity/app.ts'), import('./identity-faces.ts')]);
      return buildIdentityApp({
        metrics,
        logLevel: config.logLevel,
        logStream: overrides.logStream,
        trustProxy: config.trustProxy,
        publicUrl: config.publicUrl,
        // Every signed request needs the replay guard: with Redis configured, the face is ready only when it answers.
        ping: redis ? async () => { await store.ping(); await redis.ping(); } : store.ping,
        authenticator,
        users,
        groups: services.groups,
        areas: adminAreas(services),
        bearer: services.oauthTokens,
        plugins: identityPlugins(services, { config, clock, masterKey }),
        rateLimits: identityLimits,
      });
    },
    buildSiteApp: async (siteOverrides = {}) => {
      // An override replaces the composition's value (its config, its log stream) for this site only.
      const { config: siteConfig, logStream } = { config, logStream: overrides.logStream, ...siteOverrides };
      const parts = await composeSite({
        config, clock, db, changes, masterKey, throttles,
        customers, users, groups: services.groups, mfa: services.mfa, services,
      }, siteOverrides);
      const { buildSiteApp } = await import('../site/app.ts');
      return buildSiteApp({ config: siteConfig, ping: store.ping, parts, logStream, metrics, rateLimits: siteLimits });
    },
    // A store passed in belongs to the caller (tests share one per PostgreSQL schema).
    close: async () => {
      await mail.worker.stop();
      await identity.magicLinkPurge.stop();
      await identity.samlPurge.stop();
      await identity.auditPurge.stop();
      await identity.webhookWorker.stop();
      mail.close();
      redis?.disconnect();
      if (!overrides.store) await store.close();
    },
  };
}
