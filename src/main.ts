/**
 * Server entry: load config, open and migrate the store, create the first customer on an empty
 * database, serve both faces, and on SIGTERM/SIGINT drain in-flight requests before exiting.
 */
import { compose } from './compose.ts';
import { loadConfig } from './config.ts';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await compose(config);

  if ((await app.services.customers.list(1)).length === 0) {
    const created = await app.services.customers.create({ email: 'admin@localhost', displayName: 'Latchkey' });
    // Printed once, to the terminal only: the API key is never logged and cannot be shown again.
    process.stdout.write([
      '',
      'Latchkey: created the first customer. Keep these; the API key is not shown again.',
      `  Customer ID:  ${created.customerId}`,
      `  Customer key: ${created.customerKey}`,
      `  API key:      ${created.apiKey}`,
      '',
    ].join('\n') + '\n');
  }

  const identity = await app.buildIdentityApp();
  const site = await app.buildSiteApp();
  await identity.listen({ host: config.host, port: config.identityPort });
  await site.listen({ host: config.host, port: config.sitePort });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    identity.log.info({ signal }, 'shutting down: draining in-flight requests');
    // close() stops accepting, waits for in-flight requests, then resolves.
    await Promise.allSettled([identity.close(), site.close()]);
    await app.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`latchkey: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
