/**
 * The server under test, in its own process (forked by bench/run.ts) so the load generator never
 * shares its event loop: both Latchkey faces as `npm start` builds them and a second content site
 * signing RS256 JWTs (same database and customer), on 127.0.0.1 ports chosen by the OS. The ceilings
 * the real routes are compared with run in another process (bench/ceiling-server.ts).
 *
 *   node dist/bench-server.js --database <sqlite path | postgres url> [--schema s] --data-dir d [--log-level l] [--smtp-url u]
 *
 * With --smtp-url its mail worker runs (as on a server), sending the outbox to that SMTP server. Its
 * webhook worker always runs, with http:// and loopback endpoints allowed (the bench's receiver).
 *
 * It can also CPU-profile chosen stretches (node:inspector), written as .cpuprofile files.
 *
 * Talks to the parent over the IPC channel (see ChildMessage / ParentMessage).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { writeHeapSnapshot } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { compose } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';
import { createStore } from '../src/store/db.ts';

/** `siteRs256`: the content site as LATCHKEY_SITE_JWT_ALG=RS256 builds it (key generated into the data dir). */
export type Face = 'identity' | 'site' | 'siteRs256';

export type ParentMessage =
  | { type: 'memory'; id: number; collect?: boolean }
  | { type: 'heap-snapshot'; id: number; path: string }
  | { type: 'profile-start'; id: number }
  | { type: 'profile-stop'; id: number; path: string }
  | { type: 'stop' };

export type ChildMessage =
  | { type: 'ready'; ports: Record<Face, number> }
  | { type: 'done'; id: number }
  | { type: 'memory'; id: number; usage: NodeJS.MemoryUsage }
  | { type: 'error'; id: number; message: string };

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

const send = (message: ChildMessage) => process.send?.(message);

async function main(): Promise<void> {
  const database = argument('database');
  const dataDir = argument('data-dir');
  if (!database || !dataDir) throw new Error('usage: server.ts --database <url> --data-dir <dir> [--schema s] [--log-level l]');
  const schema = argument('schema');
  const smtpUrl = argument('smtp-url');
  const env = {
    LATCHKEY_DATABASE_URL: database,
    LATCHKEY_DATA_DIR: dataDir,
    LATCHKEY_LOG_LEVEL: argument('log-level') ?? 'info',
    LATCHKEY_HOST: '127.0.0.1',
    LATCHKEY_IDENTITY_PORT: '0',
    LATCHKEY_SITE_PORT: '0',
    // The bench is one client address: a per-address budget would measure the limiter, not the landing.
    LATCHKEY_RATE_LIMIT_LANDING: '0',
    // The webhook-delivery scenario's receiver is a plain-HTTP server on 127.0.0.1 in the bench process.
    LATCHKEY_WEBHOOKS_ALLOW_HTTP: 'true',
    LATCHKEY_WEBHOOKS_ALLOW_PRIVATE: 'true',
    ...(smtpUrl ? { LATCHKEY_SMTP_URL: smtpUrl } : {}),
    // The replay guard, rate limits and throttles in Redis, as LATCHKEY_REDIS_URL would put them.
    ...(process.env.LATCHKEY_BENCH_REDIS_URL ? { LATCHKEY_REDIS_URL: process.env.LATCHKEY_BENCH_REDIS_URL } : {}),
  };
  const config = loadConfig(env);
  const store = await createStore(database, schema ? { schema } : {});
  const composition = await compose(config, { store });
  const faces: Record<Face, FastifyInstance> = {
    identity: await composition.buildIdentityApp(),
    site: await composition.buildSiteApp(),
    siteRs256: await composition.buildSiteApp({ config: loadConfig({ ...env, LATCHKEY_SITE_JWT_ALG: 'RS256' }) }),
  };

  if (smtpUrl) composition.mailWorker.start();
  // As on a server (main.ts starts every background task): it polls an empty table until a scenario makes an endpoint.
  composition.webhookWorker.start();

  const ports = {} as Record<Face, number>;
  for (const [face, app] of Object.entries(faces) as [Face, FastifyInstance][]) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    ports[face] = (app.server.address() as { port: number }).port;
  }

  // A full collection, so that the heap "used" after it is what is still held (per-scenario memory).
  async function collectGarbage(): Promise<void> {
    const gc = new Session();
    gc.connect();
    try {
      await gc.post('HeapProfiler.collectGarbage');
    } finally {
      gc.disconnect();
    }
  }

  // CPU profiles of chosen stretches only (the real route under load, not ceilings or warm-up).
  let session: Session | undefined;
  async function startProfile(): Promise<void> {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
  }
  async function stopProfile(path: string): Promise<void> {
    if (!session) throw new Error('no profile running');
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(path, JSON.stringify(profile));
    session.disconnect();
    session = undefined;
  }

  async function stop(): Promise<void> {
    await Promise.allSettled(Object.values(faces).map((app) => app.close()));
    await composition.close();
    await store.close();
    // process.exit() lets --cpu-prof write its profile.
    process.exit(0);
  }

  process.on('message', (message: ParentMessage) => {
    const run = async () => {
      if (message.type === 'memory') {
        if (message.collect) await collectGarbage();
        send({ type: 'memory', id: message.id, usage: process.memoryUsage() });
      } else if (message.type === 'heap-snapshot') {
        writeHeapSnapshot(message.path);
        send({ type: 'done', id: message.id });
      } else if (message.type === 'profile-start') {
        await startProfile();
        send({ type: 'done', id: message.id });
      } else if (message.type === 'profile-stop') {
        await stopProfile(message.path);
        send({ type: 'done', id: message.id });
      } else if (message.type === 'stop') await stop();
    };
    run().catch((error: unknown) => send({ type: 'error', id: 'id' in message ? message.id : -1, message: (error as Error).message ?? String(error) }));
  });
  // The parent went away (Ctrl-C, crash): do not linger.
  process.on('disconnect', () => process.exit(1));
  send({ type: 'ready', ports });
}

main().catch((error: unknown) => {
  process.stderr.write(`bench server: ${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
