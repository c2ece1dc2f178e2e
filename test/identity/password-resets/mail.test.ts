/** The 'password-reset' mail: the user, the link and its expiry in both parts, escaped in HTML, refused without a safe link. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMail } from '../../../src/mail/templates.ts';

const link = 'https://id.example.test/customers/123/reset/abc_DEF-123';

test('the reset mail names the user, the link and its expiry in both parts', () => {
  const mail = renderMail('password-reset', { userName: 'Ada Lovelace', link, expiresInMinutes: 30 });
  assert.equal(mail.subject, 'Reset your password');
  for (const part of [mail.text, mail.html]) {
    assert.ok(part.includes('Ada Lovelace') && part.includes(link) && part.includes('30 minutes') && part.includes('If you did not ask for it'));
  }
  assert.ok(mail.html.includes(`<a href="${link}">Choose a new password</a>`));
});

test('parameters are escaped in the HTML part; a link that is not http(s) or a missing name is refused', () => {
  const mail = renderMail('password-reset', { userName: '<b>Eve</b> & co', link: `${link}?a=1&b=2`, expiresInMinutes: 1 });
  assert.ok(mail.html.includes('&lt;b&gt;Eve&lt;/b&gt; &amp; co') && !mail.html.includes('<b>'));
  assert.ok(mail.html.includes(`href="${link}?a=1&amp;b=2"`));
  assert.ok(mail.text.includes('1 minute.'));
  for (const bad of ['javascript:alert(1)', 'data:text/html,x', '']) {
    assert.throws(() => renderMail('password-reset', { userName: 'Ada', link: bad, expiresInMinutes: 30 }), { name: 'Invalid' });
  }
  assert.throws(() => renderMail('password-reset', { userName: '', link, expiresInMinutes: 30 }), { name: 'Invalid' });
  assert.throws(() => renderMail('password-reset', { userName: 'Ada', link, expiresInMinutes: 0 }), { name: 'Invalid' });
});
