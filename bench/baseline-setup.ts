/**
 * The baseline's database, set up by the baseline's own code (bench/baseline.ts runs this): its
 * migrations, its customers service, its bench seeding. Prints the customer as one JSON line.
 *
 *   node --import tsx bench/baseline-setup.ts --root <worktree> --database <url> [--schema s] --data-dir d --users N
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

async function main(): Promise<void> {
  const [root, database, dataDir, users] = ['root', 'database', 'data-dir', 'users'].map(argument);
  if (!root || !database || !dataDir || !users) throw new Error('usage: baseline-setup.ts --root r --database url --data-dir d --users N [--schema s]');
  const schema = argument('schema');
  const from = (path: string) => import(pathToFileURL(join(root, path)).href);
  // The composition moved from src/compose.ts to src/compose/index.ts; a baseline may have either.
  const composePath = existsSync(join(root, 'src/compose/index.ts')) ? 'src/compose/index.ts' : 'src/compose.ts';
  const [{ compose }, { loadConfig }, { createStore }, { seedUsers }] = await Promise.all([from(composePath), from('src/config.ts'), from('src/store/db.ts'), from('bench/seed.ts')]);
  const config = loadConfig({ LATCHKEY_DATA_DIR: dataDir, LATCHKEY_DATABASE_URL: database, LATCHKEY_LOG_LEVEL: 'silent' });
  const store = await createStore(database, { ...(schema ? { schema } : {}), poolSize: 4 });
  const composition = await compose(config, { store });
  try {
    const customer = await composition.services.customers.create({ email: 'bench@bench.example', displayName: 'Bench' });
    const seed = await seedUsers(store, customer.customerId, Number(users));
    process.stderr.write(`baseline: seeded ${seed.users.toLocaleString('en-US')} users in ${seed.seconds.toFixed(1)} s\n`);
    process.stdout.write(`${JSON.stringify({ customerId: customer.customerId, customerKey: customer.customerKey, apiKey: customer.apiKey })}\n`);
  } finally {
    await composition.close();
    await store.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`baseline setup: ${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
