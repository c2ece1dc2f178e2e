/**
 * Server entry: load config, open and migrate the store, check the master key opens the database's
 * secrets, create the first customer on an empty database, serve both faces and the management
 * interface, and on SIGTERM/SIGINT drain in-flight requests before exiting.
 */
import { compose } from './compose.ts';
import { loadConfig } from './config.ts';
import { Conflict } from './lib/errors.ts';
import { siteNotReady } from './site/app.ts';

const FIRST_CUSTOMER_EMAIL = 'admin@localhost';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await compose(config);
  // Before anything is served: a node with another master key would answer 500 on every signed request.
  try {
    await app.checkMasterKey();
  } catch (error) {
    await app.close();
    throw error;
  }

  if ((await app.services.customers.list(1)).length === 0) {
    try {
      const created = await app.services.customers.create({ email: FIRST_CUSTOMER_EMAIL, displayName: 'Latchkey' });
      // Printed once, to the terminal only: the API key is never logged and cannot be shown again.
      process.stdout.write([
        '',
        'Latchkey: created the first customer. Keep these; the API key is not shown again.',
        `  Customer ID:  ${created.customerId}`,
        `  Customer key: ${created.customerKey}`,
        `  API key:      ${created.apiKey}`,
        '',
      ].join('\n') + '\n');
    } catch (error) {
      // Another node starting on the same empty database created it first: that node printed it.
      if (!(error instanceof Conflict)) throw error;
    }
  }

  const identity = await app.buildIdentityApp();
  // A site that cannot tell which customer it serves still listens: every route answers 503 with
  // the reason, and the admin API (how an operator fixes it) keeps running.
  const site = await app.buildSiteApp();
  const siteReason = siteNotReady(site);
  if (siteReason !== undefined) process.stderr.write(`latchkey: content site not serving: ${siteReason}\n`);
  const management = await app.buildManagementApp({ siteNotReady: () => siteNotReady(site) });
  try {
    await identity.listen({ host: config.host, port: config.identityPort });
    await site.listen({ host: config.host, port: config.sitePort });
    await management.listen({ host: config.managementHost, port: config.managementPort });
  } catch (error) {
    await Promise.allSettled([identity.close(), site.close(), management.close()]);
    await app.close();
    throw error;
  }
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
  // One line, no stack: a configuration mistake (the master key, bad settings) is the usual cause.
  process.stderr.write(`latchkey: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
