/**
 * The console tests' browser and server: Debian's chromium driven by playwright-core (no browser
 * download, nothing fetched from outside), and a real identity face on port 0 with a movable clock.
 */
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { createConsoleAccounts } from '../../src/compose/identity.ts';
import { createSealer } from '../../src/lib/seal.ts';
import { build, type TestApp } from '../helpers/app.ts';
import type { StoreKind } from '../helpers/stores.ts';

/**
 * Debian's chromium-headless-shell first: Chromium's headless build (the same Blink, network stack and
 * cookie rules, no browser UI process), which Playwright itself runs for headless tests. Chromium was a
 * fifth of the whole test run's CPU; two browser files took 33 s of CPU with the shell, 45 s with the browser.
 */
const CANDIDATES = [process.env.LATCHKEY_TEST_CHROMIUM, '/usr/bin/chromium-headless-shell', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The browser executable, or undefined (the suite then skips, and fails when CI=true). */
export function findChromium(): string | undefined {
  return CANDIDATES.find((path): path is string => typeof path === 'string' && path !== '' && existsSync(path));
}

export const NO_BROWSER = 'no Chromium found (looked at LATCHKEY_TEST_CHROMIUM, /usr/bin/chromium-headless-shell, /usr/bin/chromium, /usr/bin/chromium-browser, /usr/bin/google-chrome): install it with "apt-get install chromium-headless-shell"';

let shared: Promise<Browser> | undefined;
/** One headless browser per test file; each test gets a fresh context (its own cookies; `options` e.g. without JavaScript). */
export async function browser(t: TestContext, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  shared ??= chromium.launch({
    executablePath: findChromium(),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const context = await (await shared).newContext(options);
  t.after(() => context.close());
  return context;
}

export async function closeBrowser(): Promise<void> {
  if (shared) await (await shared).close();
  shared = undefined;
}

export interface ConsoleServer extends TestApp {
  url: string;
  email: string;
  password: string;
}

export const OWNER_PASSWORD = 'correct horse battery staple';

/** A composed Latchkey listening on a real port, its customer's console password set. */
export async function consoleServer(t: TestContext, kind: StoreKind = 'sqlite', env: Record<string, string> = {}): Promise<ConsoleServer> {
  const app = await build(t, kind, env);
  await app.identity.listen({ port: 0, host: '127.0.0.1' });
  const address = app.identity.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const { owners } = createConsoleAccounts({ db: app.composition.store.db, clock: app.clock, sealer: createSealer(app.composition.masterKey) });
  const { email } = await owners.setPassword(app.customer.customerKey, OWNER_PASSWORD);
  return { ...app, url: `http://127.0.0.1:${address.port}`, email, password: OWNER_PASSWORD };
}

export async function signIn(page: Page, server: ConsoleServer, password = server.password): Promise<void> {
  await page.goto(`${server.url}/console`);
  await page.getByLabel('E-mail').fill(server.email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** From any console page: Users, Create user with these fields, and wait for the new user's page. */
export async function createUserInConsole(page: Page, username: string, password: string): Promise<void> {
  await page.getByRole('link', { name: 'Users', exact: true }).click();
  await page.getByRole('button', { name: 'Create user' }).click();
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('E-mail').fill(`${username}@example.test`);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('heading', { name: username }).waitFor();
}
