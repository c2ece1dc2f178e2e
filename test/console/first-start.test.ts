/**
 * The first start's way into the console, in a real browser through the names DESIGN.md fixes: the server
 * started as `npm start` starts it on an empty database prints `Console: <url>` and the owner's one-time
 * link; the link opens `New password` / `Confirm password` / `Set password`, which lands in the console
 * signed in; a second visit is refused; the token is in no log line. In-process, with a movable clock:
 * an expired link is refused, form errors keep the link usable, concurrent uses let exactly one win.
 * Both stores.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test, type TestContext } from 'node:test';
import { FIRST_SIGN_IN_TTL_MS } from '../../src/console/first-sign-in/service.ts';
import { freePort } from '../helpers/ports.ts';
import { describeEachStore, emptyPostgresSchemaUrl, type StoreKind } from '../helpers/stores.ts';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium } from './browser.ts';
import { ROOT } from '../helpers/paths.ts';

const LIMIT_MS = 120_000;
const LINK = /^ {2}(http:\/\/\S+\/console\/first-sign-in\/([A-Za-z0-9_-]{43}))$/m;
const NEW_PASSWORD = 'a long first passphrase';

after(closeBrowser);

/** The start script on a bundle of this file's own (dist/main.js is shared with whoever else builds), built once. */
const BUNDLE = `dist/first-start-test-${process.pid}.js`;
let startCommand: string | undefined;
if (findChromium()) {
  const built = spawnSync(process.execPath, ['scripts/build.mjs', 'src/main.ts', BUNDLE], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  after(() => rmSync(join(ROOT, BUNDLE), { force: true }));
  const script: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start.replace('dist/main.js', BUNDLE);
  startCommand = /^exec\s/.test(script) ? script : `exec ${script}`;
}

/** A database URL for a child on `kind`: a new SQLite file, or a schema of its own on PostgreSQL. */
async function emptyDatabase(t: TestContext, kind: StoreKind, dataDir: string): Promise<string> {
  if (kind === 'sqlite') return join(dataDir, 'latchkey.sqlite');
  return emptyPostgresSchemaUrl(t, 'lk_first');
}

/** `npm start` on an empty database; resolves once the three "Server listening" lines are out. */
async function startFirstRun(t: TestContext, kind: StoreKind) {
  const dataDir = mkdtempSync(join(tmpdir(), 'latchkey-first-start-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const [identityPort, sitePort, managementPort] = [await freePort(), await freePort(), await freePort()];
  const env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('LATCHKEY_'))),
    LATCHKEY_DATA_DIR: dataDir,
    LATCHKEY_DATABASE_URL: await emptyDatabase(t, kind, dataDir),
    LATCHKEY_HOST: '127.0.0.1',
    LATCHKEY_IDENTITY_PORT: String(identityPort),
    LATCHKEY_SITE_PORT: String(sitePort),
    LATCHKEY_MANAGEMENT_PORT: String(managementPort),
    LATCHKEY_LOG_LEVEL: 'trace',
  };
  const child = spawn('sh', ['-c', startCommand!], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { err += chunk; });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  await new Promise<void>((done, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if ((out.match(/Server listening at/g) ?? []).length >= 3) done();
    });
    void exited.then((code) => reject(new Error(`server exited (${code})\nstdout:\n${out}\nstderr:\n${err}`)));
  });
  return {
    url: `http://127.0.0.1:${identityPort}`,
    stdout: () => out,
    stderr: () => err,
    async stop() { child.kill('SIGTERM'); return exited; },
  };
}

if (!findChromium()) {
  if (process.env.CI === 'true') test('first start browser tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('first start browser tests', { skip: NO_BROWSER }, () => {});
} else {
  describeEachStore('first start', (kind) => {
    test('npm start prints the console URL and a one-time link; the link sets the owner password and signs in, once', { timeout: LIMIT_MS }, async (t) => {
      const server = await startFirstRun(t, kind);
      const printed = server.stdout();
      assert.ok(printed.includes(`\nConsole: ${server.url}/console\n`), printed);
      const link = LINK.exec(printed);
      assert.ok(link, `no sign-in link in:\n${printed}`);
      const [, url, token] = link;
      assert.equal(url, `${server.url}/console/first-sign-in/${token}`);
      assert.ok(/ {2}API key: +lkak_/.test(printed), 'the API key is printed as before');

      const page = await (await browser(t)).newPage();
      await page.goto(url);
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByRole('link', { name: 'Account', exact: true }).waitFor();
      assert.equal(new URL(page.url()).pathname, '/console/account');

      // Used: a second visit is refused, and says where to sign in instead.
      const again = await page.goto(url);
      assert.equal(again?.status(), 410);
      await page.getByRole('alert').filter({ hasText: 'This sign-in link has already been used.' }).waitFor();
      await page.getByRole('link', { name: 'Go to the sign-in page' }).click();
      // Still signed in (the sign-in page sends a signed-in owner to the console); signed out, the new password works.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('E-mail').fill('admin@localhost');
      await page.getByLabel('Password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();

      assert.equal(await server.stop(), 0, server.stderr());
      const lines = server.stdout().split('\n');
      const logLines = lines.filter((line) => line.startsWith('{'));
      assert.ok(logLines.some((line) => line.includes('"url":"/console/first-sign-in/[token]"')), 'the link\'s requests were logged, redacted');
      assert.deepEqual(logLines.filter((line) => line.includes(token)), [], 'the token is in no log line');
      assert.equal(lines.filter((line) => line.includes(token)).length, 1, 'the link is printed once');
      assert.ok(!server.stderr().includes(token));
    });

    test('an expired link is refused; form errors show beside their field and leave the link usable', { timeout: LIMIT_MS }, async (t) => {
      const server = await consoleServer(t, kind);
      const links = server.composition.services.consoleFirstSignIn;
      const expiring = await links.issue(server.customer.customerId);
      const page = await (await browser(t)).newPage();

      // Opened just before the end, submitted just after: refused, and nothing was set.
      await page.goto(`${server.url}/console/first-sign-in/${expiring}`);
      server.clock.advance(FIRST_SIGN_IN_TTL_MS);
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('alert').filter({ hasText: 'This sign-in link has expired.' }).waitFor();
      const reopened = await page.goto(`${server.url}/console/first-sign-in/${expiring}`);
      assert.equal(reopened?.status(), 410);
      await page.getByRole('link', { name: 'Go to the sign-in page' }).waitFor();
      assert.equal((await server.composition.services.consoleOwners.checkPassword(server.email, NEW_PASSWORD, '203.0.113.9')).outcome, 'wrong');

      const fresh = await links.issue(server.customer.customerId);
      await page.goto(`${server.url}/console/first-sign-in/${fresh}`);
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill('not the same passphrase');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.locator('#confirm-password-error').filter({ hasText: 'The two passwords are not the same.' }).waitFor();
      await page.getByLabel('New password').fill('short');
      await page.getByLabel('Confirm password').fill('short');
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.locator('#new-password-error').filter({ hasText: 'The password must be 8 to 128 characters.' }).waitFor();
      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByLabel('Confirm password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      // A link to the other page: unknown tokens get the same page.
      const unknown = await page.goto(`${server.url}/console/first-sign-in/${'A'.repeat(43)}`);
      assert.equal(unknown?.status(), 410);
    });

    test('of 10 concurrent uses of one link exactly one sets the password; the token is stored hashed only', async (t) => {
      const server = await consoleServer(t, kind);
      const links = server.composition.services.consoleFirstSignIn;
      const token = await links.issue(server.customer.customerId);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => links.use(token, `concurrent passphrase ${i}`)));
      assert.equal(results.filter((r) => r.state === 'valid').length, 1, JSON.stringify(results));
      assert.deepEqual(results.filter((r) => r.state !== 'valid').map((r) => r.state), Array(9).fill('used'));
      const winner = results.findIndex((r) => r.state === 'valid');
      assert.equal((await server.composition.services.consoleOwners.checkPassword(server.email, `concurrent passphrase ${winner}`, '203.0.113.9')).outcome, 'signed-in');
      const rows = await server.composition.store.db.selectFrom('console_first_sign_ins').selectAll().where('customer_id', '=', server.customer.customerId).execute();
      assert.equal(rows.length, 1);
      assert.ok(!JSON.stringify(rows).includes(token), 'the token is not stored');
    });
  });
}
