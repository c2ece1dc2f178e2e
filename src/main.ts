/**
 * Server entry: load config, open and migrate the store, check the master key opens the database's
 * secrets and that every port is free, create the first customer on an empty database, bind the two
 * faces and the management interface, and only then print the first customer's keys and the owner's
 * one-time console link, and say where each listens. On SIGTERM/SIGINT drain in-flight requests
 * before exiting.
 */
import { networkInterfaces } from 'node:os';
import { createServer, isIP, type Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { compose } from './compose/index.ts';
import { loadConfig } from './config.ts';
import { firstSignInUrl } from './console/first-sign-in/service.ts';
import type { CreatedCustomer } from './identity/customers/service.ts';
import { Conflict } from './lib/errors.ts';
import { siteNotReady } from './site/app.ts';

const FIRST_CUSTOMER_EMAIL = 'admin@localhost';

/** A port the server opens, with the settings an operator changes when it cannot. */
interface Listener {
  port: number;
  host: string;
  portSetting: string;
  hostSetting: string;
}

/** The one line (after "latchkey: ") that says which port could not be opened and why. */
function portProblem(error: unknown, listener: Listener, listeners: Listener[]): Error {
  const { port, portSetting, host, hostSetting } = listener;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    const shared = listeners.filter((other) => other !== listener && other.port === port).map((other) => other.portSetting);
    return new Error(`port ${port} (${portSetting}) is already in use${shared.length ? ` (${shared.join(', ')} names the same port)` : ''}`);
  }
  if (code === 'EACCES') return new Error(`port ${port} (${portSetting}) needs privileges this process does not have: choose a port above 1023`);
  if (code === 'EADDRNOTAVAIL') return new Error(`port ${port} (${portSetting}) cannot be opened on ${host} (${hostSetting}): no interface of this machine has that address`);
  return new Error(`port ${port} (${portSetting}) cannot be opened: ${(error as Error).message ?? error}`);
}

function listenOn(server: Server, listener: Listener, listeners: Listener[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => { server.off('listening', listening); reject(portProblem(error, listener, listeners)); };
    const listening = () => { server.off('error', failed); resolve(); };
    server.once('error', failed);
    server.once('listening', listening);
    server.listen({ host: listener.host, port: listener.port });
  });
}

/**
 * Opens each fixed port at once and lets it go: a port taken by another program is reported before
 * the first customer is created (its keys would otherwise never be shown). The faces bind for real
 * later; another program taking a port in between is still reported, by bindAll.
 */
async function checkPortsFree(listeners: Listener[]): Promise<void> {
  const held: Server[] = [];
  try {
    for (const listener of listeners.filter((l) => l.port !== 0)) {
      const probe = createServer();
      await listenOn(probe, listener, listeners);
      held.push(probe);
    }
  } finally {
    await Promise.all(held.map((probe) => new Promise((closed) => probe.close(closed))));
  }
}

/**
 * Binds every face's socket without a word, in order; the first that fails closes them all. Fastify's
 * listen() would log "Server listening" for a face before the next one had its port: nothing is printed
 * until all are bound.
 */
async function bindAll(faces: { app: FastifyInstance; listener: Listener }[], listeners: Listener[]): Promise<void> {
  for (const { app, listener } of faces) {
    await app.ready();
    await listenOn(app.server, listener, listeners);
  }
}

/** Fastify's own "Server listening at" lines (one per IPv4 interface for 0.0.0.0), written once every face is bound. */
function logListening(app: FastifyInstance): void {
  const address = app.server.address();
  if (!address || typeof address === 'string') return;
  const hosts = address.address === '0.0.0.0'
    ? Object.values(networkInterfaces()).flatMap((list) => list ?? []).filter((i) => i.family === 'IPv4')
      .sort((a, b) => Number(b.internal) - Number(a.internal)).map((i) => i.address)
    : [address.family === 'IPv6' ? `[${address.address}]` : address.address];
  for (const host of hosts) app.log.info(`Server listening at http://${host}:${address.port}`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await compose(config);
  const identityListener: Listener = { port: config.identityPort, host: config.host, portSetting: 'LATCHKEY_IDENTITY_PORT', hostSetting: 'LATCHKEY_HOST' };
  const siteListener: Listener = { port: config.sitePort, host: config.host, portSetting: 'LATCHKEY_SITE_PORT', hostSetting: 'LATCHKEY_HOST' };
  const managementListener: Listener = { port: config.managementPort, host: config.managementHost, portSetting: 'LATCHKEY_MANAGEMENT_PORT', hostSetting: 'LATCHKEY_MANAGEMENT_HOST' };
  const listeners = [identityListener, siteListener, managementListener];
  let created: CreatedCustomer | undefined;
  try {
    // Before anything is served: a node with another master key would answer 500 on every signed request.
    await app.checkMasterKey();
    await checkPortsFree(listeners);
    if ((await app.services.customers.list(1)).length === 0) {
      try {
        created = await app.services.customers.create({ email: FIRST_CUSTOMER_EMAIL, displayName: 'Latchkey' });
      } catch (error) {
        // Another node starting on the same empty database created it first: that node prints it.
        if (!(error instanceof Conflict)) throw error;
      }
    }
  } catch (error) {
    await app.close();
    throw error;
  }

  const identity = await app.buildIdentityApp();
  // A site that cannot tell which customer it serves still listens: every route answers 503 with
  // the reason, and the admin API (how an operator fixes it) keeps running.
  const site = await app.buildSiteApp();
  const siteReason = siteNotReady(site);
  if (siteReason !== undefined) process.stderr.write(`latchkey: content site not serving: ${siteReason}\n`);
  // Browsers refuse an IP address as a WebAuthn relying party ID: say so where someone will read it.
  if (isIP(new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, '')) !== 0 && await app.services.policies.anyAsksForPasskeys()) {
    process.stderr.write(`latchkey: passkeys cannot work at ${config.publicUrl}: browsers refuse an IP address as the relying party ID; set LATCHKEY_PUBLIC_URL to a host name (locally http://localhost:${config.identityPort})\n`);
  }
  const management = await app.buildManagementApp({ siteNotReady: () => siteNotReady(site) });
  const faces = [{ app: identity, listener: identityListener }, { app: site, listener: siteListener }, { app: management, listener: managementListener }];
  try {
    await bindAll(faces, listeners);
  } catch (error) {
    await Promise.allSettled([identity.close(), site.close(), management.close()]);
    await app.close();
    if (created) {
      process.stderr.write(`latchkey: the first customer was created but its keys were not shown: once the port is free, \`npx latchkey customer rotate-key --customer-key ${created.customerKey}\` prints a new API key and \`npx latchkey customer set-password\` sets the console password\n`);
    }
    throw error;
  }

  if (created) {
    const token = await app.services.consoleFirstSignIn.issue(created.customerId);
    // Printed once, to the terminal only: the API key and the link are never logged and cannot be shown again.
    process.stdout.write([
      '',
      'Latchkey: created the first customer. Keep these; the API key is not shown again.',
      `  Customer ID:  ${created.customerId}`,
      `  Customer key: ${created.customerKey}`,
      `  API key:      ${created.apiKey}`,
      '',
      `Console: ${config.publicUrl}/console`,
      `Set the console password of ${FIRST_CUSTOMER_EMAIL} with this link (valid 15 minutes, once):`,
      `  ${firstSignInUrl(config.publicUrl, token)}`,
      '',
    ].join('\n') + '\n');
  }
  for (const face of faces) logListening(face.app);
  for (const task of app.background) task.start();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second Ctrl-C means "now".
      identity.log.warn({ signal }, 'second signal: exiting without waiting');
      process.exit(1);
    }
    stopping = true;
    identity.log.info({ signal }, 'shutting down: draining in-flight requests');
    const deadline = setTimeout(() => {
      identity.log.error({ timeoutSeconds: config.shutdownTimeoutSeconds }, 'requests still running at the shutdown deadline: exiting');
      process.exit(1);
    }, config.shutdownTimeoutSeconds * 1000);
    deadline.unref();
    // close() stops accepting, answers new requests on open connections with 503, waits for the
    // in-flight ones, then resolves; only then is the database closed under them.
    await Promise.allSettled([identity.close(), site.close(), management.close(), ...app.background.map((task) => task.stop())]);
    await app.close();
    identity.log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  // One line, no stack: a configuration mistake (the master key, bad settings, a port in use) is the usual cause.
  process.stderr.write(`latchkey: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
