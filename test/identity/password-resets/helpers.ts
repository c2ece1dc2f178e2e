/** The forgotten-password tests' fixtures: a user, and the reset link read from the mail a real SMTP server received. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SYSTEM } from '../../../src/audit/context.ts';
import type { TestApp } from '../../helpers/app.ts';
import type { SmtpSink } from '../../helpers/smtp-sink.ts';

export const PASSWORD = 'correct horse battery staple';
export const NEW_PASSWORD = 'a brand new passphrase';

export async function newUser(env: TestApp) {
  const username = `p${randomBytes(4).toString('hex')}`;
  const { customerId } = env.customer;
  await env.composition.services.users.create(customerId, {
    username, email: `${username}@example.test`, firstName: 'Pat', lastName: 'Reset', password: PASSWORD, customAttributes: {},
  }, SYSTEM);
  return (await env.composition.services.users.findByLogin(customerId, username))!;
}

/** The issuer's reset links, with the token as group 1. */
export const resetLinkPattern = (issuer: string) => new RegExp(`${issuer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/reset/([A-Za-z0-9_-]{43})`);

/** Runs the mail worker until `count` mails to `to` have arrived; returns their reset links, oldest first. */
export async function mailedLinks(env: TestApp, sink: SmtpSink, to: string, count = 1): Promise<string[]> {
  const issuer = env.composition.services.oidc.customerIssuer(env.customer.customerKey);
  const deadline = Date.now() + 10_000;
  for (;;) {
    await env.composition.mailWorker.runOnce();
    const mails = sink.messages.filter((m) => m.envelope.to.includes(to));
    if (mails.length >= count) {
      return mails.map((mail) => {
        assert.equal(mail.parsed.subject, 'Reset your password');
        const link = resetLinkPattern(issuer).exec(mail.parsed.text ?? '')?.[0];
        assert.ok(link, 'the mail holds the link');
        return link;
      });
    }
    assert.ok(Date.now() < deadline, `${count} mail(s) to ${to} arrive`);
    await sink.waitFor(sink.messages.length + 1, 500).catch(() => {});
  }
}

export const tokenOf = (link: string) => link.slice(link.lastIndexOf('/') + 1);
