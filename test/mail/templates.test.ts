/** The invite template and the address checks: escaping, one-line subjects, single recipients. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkRecipient, parseSender } from '../../src/mail/addresses.ts';
import { renderMail } from '../../src/mail/templates.ts';

const link = 'https://id.example.test/magic/abc_DEF-123';

test('the invite names the user, the application, the link and the expiry in both parts', () => {
  const mail = renderMail('magic-link-invite', { userName: 'Ada', applicationName: 'Wiki', link, expiresInMinutes: 15 });
  assert.equal(mail.subject, 'Sign in to Wiki');
  for (const part of [mail.text, mail.html]) {
    assert.ok(part.includes('Ada') && part.includes('Wiki') && part.includes(link) && part.includes('15 minutes'));
  }
  assert.ok(mail.html.includes(`<a href="${link}">`));
});

test('every parameter is HTML-escaped in the HTML part, and left as written in the text part', () => {
  const mail = renderMail('magic-link-invite', {
    userName: '<script>alert(1)</script>', applicationName: 'A & "B" <i>', link: `${link}?a=1&b="2"`, expiresInMinutes: 5,
  });
  assert.ok(!mail.html.includes('<script>') && !mail.html.includes('<i>'));
  assert.ok(mail.html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(mail.html.includes('A &amp; &quot;B&quot; &lt;i&gt;'));
  assert.ok(mail.html.includes(`href="${link}?a=1&amp;b=&quot;2&quot;"`));
  assert.ok(mail.text.includes('<script>alert(1)</script>'));
});

test('the subject is one line whatever the application name holds', () => {
  const mail = renderMail('magic-link-invite', { userName: 'Ada', applicationName: 'Wiki\r\nBcc: eve@evil.test\u2028x', link, expiresInMinutes: 1 });
  assert.equal(mail.subject, 'Sign in to Wiki Bcc: eve@evil.test x');
  assert.ok(mail.text.includes('1 minute.'));
});

test('a link that is not http(s), or a missing parameter, is refused', () => {
  for (const bad of ['javascript:alert(1)', 'data:text/html,x', 'not a url', '']) {
    assert.throws(() => renderMail('magic-link-invite', { userName: 'Ada', applicationName: 'Wiki', link: bad, expiresInMinutes: 5 }), { name: 'Invalid' });
  }
  assert.throws(() => renderMail('magic-link-invite', { userName: '', applicationName: 'Wiki', link, expiresInMinutes: 5 }), { name: 'Invalid' });
  assert.throws(() => renderMail('magic-link-invite', { userName: 'Ada', applicationName: 'Wiki', link, expiresInMinutes: 0 }), { name: 'Invalid' });
  assert.throws(() => renderMail('nope' as 'magic-link-invite', { userName: 'Ada', applicationName: 'Wiki', link, expiresInMinutes: 5 }), { name: 'Invalid' });
});

test('a recipient is exactly one bare address; the sender may carry a name', () => {
  assert.equal(checkRecipient('ada.l+x@example.test'), 'ada.l+x@example.test');
  for (const bad of ['ada@example.test\r\nBcc: eve@evil.test', 'a@x.test,b@y.test', 'Ada <ada@example.test>', ' ada@example.test', 'ada@', '@x.test', 'a b@x.test', 'a@x.test\n', `${'a'.repeat(250)}@x.test`]) {
    assert.throws(() => checkRecipient(bad), { name: 'Invalid' }, JSON.stringify(bad));
  }
  assert.deepEqual(parseSender('Latchkey <no-reply@example.test>'), { name: 'Latchkey', address: 'no-reply@example.test' });
  assert.deepEqual(parseSender('no-reply@example.test'), { name: '', address: 'no-reply@example.test' });
  for (const bad of ['a@x.test, b@x.test', 'Latchkey <no-reply@example.test>\r\nBcc: e@x.test', 'nobody']) {
    assert.throws(() => parseSender(bad), { name: 'Invalid' }, JSON.stringify(bad));
  }
});
