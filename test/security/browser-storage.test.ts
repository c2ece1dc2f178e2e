/**
 * What a browser keeps and runs, in a real one (Debian's chromium through playwright-core): the console and
 * the landing pages run no script and allow none (ASVS V3.7.1), store nothing in browser storage and only
 * HttpOnly session cookies on the console's path (V14.3.3, V3.3.3), leave nothing behind after sign-out (V14.3.1), and no page, the
 * API documentation included, makes the browser contact any other origin (V14.2.3).
 * Skips saying why when no browser is installed; fails in CI.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import type { Page, Response } from 'playwright-core';
import { NO_BROWSER, browser, closeBrowser, consoleServer, findChromium, createUserInConsole, signIn } from '../console/browser.ts';

after(closeBrowser);

/** Everything a script could leave in this origin's browser storage, and the scripts the page has. */
async function clientState(page: Page): Promise<Record<string, number>> {
  return page.evaluate(async () => ({
    localStorage: localStorage.length,
    sessionStorage: sessionStorage.length,
    indexedDB: (await indexedDB.databases()).length,
    cacheStorage: (await caches.keys()).length,
    serviceWorkers: (await navigator.serviceWorker.getRegistrations()).length,
    scripts: document.scripts.length,
    // Cookies readable by a script: none, every cookie is HttpOnly.
    documentCookie: document.cookie.length,
  }));
}

const EMPTY = { localStorage: 0, sessionStorage: 0, indexedDB: 0, cacheStorage: 0, serviceWorkers: 0, scripts: 0, documentCookie: 0 };

if (!findChromium()) {
  if (process.env.CI === 'true') test('browser storage tests', () => { throw new Error(`CI must run the browser tests: ${NO_BROWSER}`); });
  else describe('browser storage tests', { skip: NO_BROWSER }, () => {});
} else {
  test('console and landing: no script (a group page: only the console script file), nothing in browser storage, HttpOnly cookies only, nothing left after sign-out, no other origin contacted', async (t) => {
    const server = await consoleServer(t, 'sqlite');
    const context = await browser(t);
    const origins = new Set<string>();
    context.on('request', (request) => { origins.add(new URL(request.url()).origin); });
    // Each page as it arrives (its body is gone once the browser navigates on).
    const documents: Array<Promise<{ url: string; status: number; csp: string; body: string }>> = [];
    context.on('response', (response: Response) => {
      if (response.request().resourceType() !== 'document' || response.status() >= 300 && response.status() < 400) return;
      documents.push((async () => ({
        url: response.url(),
        status: response.status(),
        csp: (await response.allHeaders())['content-security-policy'] ?? '',
        body: await response.text(),
      }))());
    });
    const page = await context.newPage();

    const visited: string[] = [];
    const check = async (what: string) => {
      visited.push(what);
      assert.deepEqual(await clientState(page), EMPTY, what);
    };

    await page.goto(`${server.url}/console`);
    await check('sign-in page');
    await signIn(page, server);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    await page.getByRole('button', { name: 'Reveal API key' }).click();
    assert.equal(await page.locator('#api-key').innerText(), server.customer.apiKey);
    // The account page adds the owner's passkeys: our own passkey script, and still nothing stored.
    assert.deepEqual(await clientState(page), { ...EMPTY, scripts: 1 }, 'account with the API key shown');
    assert.deepEqual(await page.evaluate(() => [...document.scripts].map((s) => new URL(s.src).pathname)), ['/assets/passkeys.js']);
    await createUserInConsole(page, 'alice', 'alice password 1');
    await check('a user created');
    for (const name of ['Groups', 'Applications', 'Site']) {
      await page.getByRole('link', { name, exact: true }).click();
      await page.getByRole('heading', { name }).first().waitFor();
      await check(name);
    }

    // The browser holds the session id and nothing else: HttpOnly cookies that carry no credential.
    const cookies = await context.cookies();
    assert.ok(cookies.length >= 1, 'signed in with a cookie');
    for (const cookie of cookies) {
      assert.equal(cookie.httpOnly, true, cookie.name);
      assert.equal(cookie.sameSite, 'Strict', cookie.name);
      // Scoped by path, not by a __Host- prefix (which needs Path=/): the console's cookies are its own.
      assert.equal(cookie.path, '/console', cookie.name);
      for (const secret of [server.customer.apiKey, server.password, 'alice password 1', server.email]) {
        assert.ok(!decodeURIComponent(cookie.value).includes(secret), `${cookie.name} holds a credential`);
      }
    }

    // The one page with a script: a group's page (member search as you type). Its CSP allows the
    // console's own script file and requests to the console only; no inline script or handler.
    await page.getByRole('link', { name: 'Groups', exact: true }).click();
    await page.locator('main a[href*="/console/groups/"]').first().click();
    await page.getByRole('heading', { name: 'Add member' }).waitFor();
    assert.deepEqual(await clientState(page), { ...EMPTY, scripts: 1 }, 'group page');
    const groupPageUrl = page.url();

    await page.getByRole('link', { name: 'Account', exact: true }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await check('after sign-out');
    // The session cookie is gone (or emptied), and going back does not show the signed-in pages again.
    assert.deepEqual((await context.cookies()).filter((cookie) => cookie.value !== '' && /session/i.test(cookie.name)), []);
    for (let i = 0; i < 4; i++) {
      await page.goBack();
      const html = await page.content();
      assert.ok(!html.includes(server.customer.apiKey), 'the API key is not shown again after sign-out');
      assert.ok(!html.includes('alice@example.test'), 'user data is not shown again after sign-out');
    }

    // The landing (a link that does not exist: its page, as a user holding a stale link sees it).
    await page.goto(`${server.url}/magic/${'A'.repeat(43)}`);
    await check('landing');

    assert.ok(visited.length >= 7);
    // Every page answered carries a CSP that allows no script at all, but the group page, whose script
    // is the console's own file.
    assert.ok(documents.length >= 7, `${documents.length} documents`);
    for (const { url, csp, body } of await Promise.all(documents)) {
      assert.match(csp, /default-src 'none'/, url);
      if (url === groupPageUrl) {
        assert.match(csp, /; script-src 'self'; connect-src 'self'$/, url);
        assert.deepEqual(body.match(/<script\b[^>]*>/gi), [`<script src="/console/member-search.js" defer>`], url);
        assert.doesNotMatch(body, /\son[a-z]+=["']|javascript:/i, url);
        continue;
      }
      if (['/console/account', '/console/account/api-key'].includes(new URL(url).pathname)) {
        // The owner's passkeys: our own passkey script, from this origin, and no inline code.
        assert.match(csp, /; script-src 'self'; connect-src 'self'$/, url);
        assert.deepEqual(body.match(/<script\b[^>]*>/gi), ['<script src="/assets/passkeys.js" defer>'], url);
        assert.doesNotMatch(body, /\son[a-z]+=["']|javascript:/i, url);
        continue;
      }
      assert.doesNotMatch(csp, /script-src(?!-attr 'none'|-elem 'none')(?! 'none')/, `${url}: ${csp}`);
      assert.doesNotMatch(body, /<script\b|\son[a-z]+=["']|javascript:/i, url);
    }
    assert.deepEqual([...origins], [server.url], 'the browser contacted no other origin');
  });

  test('the API documentation page loads everything from Latchkey itself and stores nothing', async (t) => {
    const server = await consoleServer(t, 'sqlite');
    const context = await browser(t);
    const requests: string[] = [];
    context.on('request', (request) => { requests.push(request.url()); });
    const page = await context.newPage();
    await page.goto(`${server.url}/api/docs`);
    await page.waitForLoadState('networkidle');
    // Swagger UI rendered the document (its scripts ran, from this origin).
    await page.getByText('/api/admin/users', { exact: false }).first().waitFor();
    assert.deepEqual(requests.filter((url) => new URL(url).origin !== server.url), [], 'no third-party asset, tracker or validator badge');
    const state = await clientState(page);
    assert.deepEqual({ ...state, scripts: 0 }, EMPTY);
  });

  test('the API documentation page works under its CSP (nothing refused), and another site cannot frame it (issue 22 item 9)', async (t) => {
    const server = await consoleServer(t, 'sqlite');
    const context = await browser(t);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (message) => { if (message.type() === 'error' || /Content Security Policy/i.test(message.text())) problems.push(message.text()); });
    page.on('pageerror', (error) => { problems.push(String(error)); });
    const response = await page.goto(`${server.url}/api/docs`);
    assert.match((await response!.allHeaders())['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    await page.waitForLoadState('networkidle');
    // Swagger UI renders the operations and opens one: its scripts, styles and images all loaded.
    await page.getByText('/api/admin/users/create', { exact: false }).first().click();
    await page.getByText('Parameters', { exact: false }).first().waitFor();
    assert.equal(await page.locator('.swagger-ui .info .title').first().isVisible(), true);
    const styled = await page.locator('.swagger-ui').first().evaluate((element) => getComputedStyle(element).fontFamily);
    assert.match(styled, /sans-serif/, 'swagger-ui.css applied');
    assert.deepEqual(problems, []);

    // A page of another origin (another port: the same address space, so only the docs' headers can
    // refuse it) framing the docs: the browser does not render them, nor fetch their scripts.
    const framing = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(`<!doctype html><iframe src="${server.url}/api/docs" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => framing.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => { framing.close(() => resolve()); framing.closeAllConnections(); }));
    const framer = await context.newPage();
    const fetched: string[] = [];
    framer.on('request', (request) => { fetched.push(request.url()); });
    // The framing page's load event waits for its frame, refused or not.
    await framer.goto(`http://127.0.0.1:${(framing.address() as AddressInfo).port}/`);
    assert.ok(fetched.includes(`${server.url}/api/docs`), 'the frame asked for the docs');
    const framed = framer.frames().find((frame) => frame !== framer.mainFrame());
    assert.ok(framed);
    assert.notEqual(framed.url(), `${server.url}/api/docs`, 'the docs rendered inside another site\'s frame');
    assert.deepEqual(fetched.filter((url) => url.includes('/api/docs/static/')), [], 'the framed docs loaded their scripts');
  });
}
