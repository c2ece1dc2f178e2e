/**
 * Files holding secrets are private (issue 13 item 4): a fresh data directory, as the server makes
 * it, holds only 0600 files (the SQLite database and its -wal/-shm, master.key, the site's RS256
 * key) in a 0700 directory, whatever the umask.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { compose } from '../src/compose/index.ts';
import { loadConfig } from '../src/config.ts';

for (const umask of [0o022, 0o000]) {
  test(`a fresh data directory is 0700 with every file 0600 (umask ${umask.toString(8).padStart(3, '0')})`, async (t) => {
    const parent = mkdtempSync(join(tmpdir(), 'latchkey-private-'));
    t.after(() => rmSync(parent, { recursive: true, force: true }));
    // Two levels the server creates: the data directory and one below the temporary parent.
    const dataDir = join(parent, 'srv', 'data');
    const previous = process.umask(umask);
    t.after(() => { process.umask(previous); });

    const app = await compose(loadConfig({ LATCHKEY_DATA_DIR: dataDir, LATCHKEY_LOG_LEVEL: 'silent', LATCHKEY_SITE_JWT_ALG: 'RS256' }));
    try {
      await app.services.customers.create({ email: 'owner@example.test' });
      // Builds the site: the RS256 key is generated into the data directory.
      const site = await app.buildSiteApp();
      await site.close();
      const files = readdirSync(dataDir).sort();
      // The database is open here: its -wal and -shm files exist.
      assert.deepEqual(files, ['latchkey.sqlite', 'latchkey.sqlite-shm', 'latchkey.sqlite-wal', 'master.key', 'site-jwt-rs256.pem']);
      const modes = Object.fromEntries(files.map((f) => [f, (statSync(join(dataDir, f)).mode & 0o777).toString(8)]));
      assert.deepEqual(modes, Object.fromEntries(files.map((f) => [f, '600'])));
      assert.equal((statSync(dataDir).mode & 0o777).toString(8), '700', 'the data directory');
      assert.equal((statSync(join(parent, 'srv')).mode & 0o777).toString(8), '700', 'a directory created on the way');
    } finally {
      await app.close();
    }
    assert.equal((statSync(parent).mode & 0o777).toString(8), '700', 'mkdtemp made it 0700; it is left as it was');
  });
}

test('a database file outside the data directory is created 0600; an existing directory keeps its mode', async (t) => {
  const parent = mkdtempSync(join(tmpdir(), 'latchkey-private-'));
  t.after(() => rmSync(parent, { recursive: true, force: true }));
  const dataDir = join(parent, 'data');
  const databaseUrl = join(parent, 'latchkey.sqlite');
  const app = await compose(loadConfig({ LATCHKEY_DATA_DIR: dataDir, LATCHKEY_DATABASE_URL: databaseUrl, LATCHKEY_LOG_LEVEL: 'silent' }));
  try {
    await app.services.customers.create({ email: 'owner@example.test' });
    for (const file of ['latchkey.sqlite', 'latchkey.sqlite-wal', 'latchkey.sqlite-shm']) {
      assert.equal((statSync(join(parent, file)).mode & 0o777).toString(8), '600', file);
    }
  } finally {
    await app.close();
  }
});
