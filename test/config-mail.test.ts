/**
 * Mail and OAuth token settings (issue 15): LATCHKEY_MAIL_FROM (default from the public URL's host),
 * LATCHKEY_SMTP_URL checked at boot, LATCHKEY_OAUTH_TOKEN_TTL_SECONDS; every problem in config.ts's
 * one message, which never echoes the SMTP URL (it may hold a password).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SYSTEM } from '../src/audit/context.ts';
import { loadConfig } from '../src/config.ts';
import { createSealer } from '../src/lib/seal.ts';
import { createOutbox } from '../src/mail/outbox.ts';
import { build } from './helpers/app.ts';
import { startSmtpSink } from './helpers/smtp-sink.ts';

const env = (extra: Record<string, string> = {}) => ({ LATCHKEY_DATA_DIR: '/tmp/latchkey-config-test', ...extra });

test('defaults: sender from the public URL host, no SMTP URL, one-hour OAuth tokens', () => {
  const config = loadConfig(env({ LATCHKEY_PUBLIC_URL: 'https://id.example.com/' }));
  assert.deepEqual(
    { from: config.mailFrom, smtp: config.smtpUrl, ttl: config.oauthTokenTtlSeconds },
    { from: 'Latchkey <no-reply@id.example.com>', smtp: undefined, ttl: 3600 },
  );
});

test('a public URL host without a dot gets .invalid in the default sender', () => {
  assert.equal(loadConfig(env({ LATCHKEY_PUBLIC_URL: 'http://localhost:8080' })).mailFrom, 'Latchkey <no-reply@localhost.invalid>');
  assert.equal(loadConfig(env()).mailFrom, 'Latchkey <no-reply@127.0.0.1>');
  assert.equal(loadConfig(env({ LATCHKEY_PUBLIC_URL: 'http://[::1]:8080' })).mailFrom, 'Latchkey <no-reply@localhost.invalid>');
});

test('values from the environment are taken as given', () => {
  const config = loadConfig(env({
    LATCHKEY_MAIL_FROM: 'Acme Sign-in <login@acme.example>',
    LATCHKEY_SMTP_URL: 'smtps://user:secret@mail.acme.example:465',
    LATCHKEY_OAUTH_TOKEN_TTL_SECONDS: '600',
  }));
  assert.deepEqual(
    { from: config.mailFrom, smtp: config.smtpUrl, ttl: config.oauthTokenTtlSeconds },
    { from: 'Acme Sign-in <login@acme.example>', smtp: 'smtps://user:secret@mail.acme.example:465', ttl: 600 },
  );
  assert.equal(loadConfig(env({ LATCHKEY_MAIL_FROM: 'bare@acme.example' })).mailFrom, 'bare@acme.example');
});

test('every bad mail or token setting is reported at boot in one message, without the SMTP URL', () => {
  assert.throws(() => loadConfig(env({
    LATCHKEY_MAIL_FROM: 'a@x.example, b@x.example',
    LATCHKEY_SMTP_URL: 'http://user:hunter2@mail.example',
    LATCHKEY_OAUTH_TOKEN_TTL_SECONDS: '10',
  })), (error: Error) => {
    assert.equal(error.message, [
      'Invalid configuration:',
      '  - LATCHKEY_SMTP_URL must be smtp://host:port or smtps://user:pass@host:port',
      '  - LATCHKEY_MAIL_FROM must be one e-mail address',
      '  - LATCHKEY_OAUTH_TOKEN_TTL_SECONDS must be between 60 and 86400',
    ].join('\n'));
    return true;
  });
});

test('a sender with a line break or without an address is refused', () => {
  for (const from of ['Latchkey <no-reply@x.example>\r\nBcc: victim@x.example', 'Latchkey', 'no-reply@']) {
    assert.throws(() => loadConfig(env({ LATCHKEY_MAIL_FROM: from })), /LATCHKEY_MAIL_FROM must be/, from);
  }
  assert.throws(() => loadConfig(env({ LATCHKEY_OAUTH_TOKEN_TTL_SECONDS: 'soon' })), /LATCHKEY_OAUTH_TOKEN_TTL_SECONDS must be an integer/);
});

test('compose passes the sender to the mail worker and the TTL to POST /oauth/token', async (t) => {
  const sink = await startSmtpSink();
  t.after(() => sink.stop());
  const env = await build(t, 'sqlite', {
    LATCHKEY_MAIL_FROM: 'Acme Sign-in <login@acme.example>', LATCHKEY_SMTP_URL: sink.url, LATCHKEY_OAUTH_TOKEN_TTL_SECONDS: '600',
  });
  const { client, clientSecret } = await env.composition.services.oauthClients.create(env.customer.customerId, { name: 'ci' }, SYSTEM);
  const token = await env.identity.inject({
    method: 'POST', url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.clientId}:${clientSecret}`).toString('base64')}` },
    payload: 'grant_type=client_credentials',
  });
  assert.equal(token.statusCode, 200, token.body);
  assert.equal((token.json() as { expires_in: number }).expires_in, 600);

  const outbox = createOutbox({ sealer: createSealer(env.composition.masterKey), clock: env.clock });
  await env.composition.store.db.transaction().execute((trx) => outbox.enqueue(trx, {
    customerId: env.customer.customerId, template: 'magic-link-invite', to: 'ada@example.test',
    params: { userName: 'Ada', applicationName: 'Wiki', link: 'https://id.example.test/magic/x', expiresInMinutes: 15 },
  }));
  assert.equal(await env.composition.mailWorker.runOnce(), 1);
  const [mail] = await sink.waitFor(1);
  assert.deepEqual({ from: mail!.parsed.from?.value, envelope: mail!.envelope.from }, {
    from: [{ name: 'Acme Sign-in', address: 'login@acme.example' }], envelope: 'login@acme.example',
  });
});
