/** The hosted sign-in's LOGIN mail: the code and the link in both parts, escaped, and its checks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMail } from '../../../src/mail/templates.ts';

const link = 'https://id.example.test/magic/abc_DEF-123';

test('the LOGIN mail carries the 6-digit code on a line of its own, the link and the expiry; names are escaped in HTML', () => {
  const mail = renderMail('magic-link-login', { userName: 'Ada <b>', applicationName: 'Wiki & Co', link, code: '042917', expiresInMinutes: 15 });
  assert.equal(mail.subject, 'Your sign-in to Wiki & Co');
  assert.match(mail.text, /^042917$/m);
  assert.ok(mail.text.includes(link) && mail.text.includes('15 minutes') && mail.text.includes('Ada <b>'));
  assert.ok(mail.html.includes('<strong>042917</strong>') && mail.html.includes(`<a href="${link}">`));
  assert.ok(mail.html.includes('Ada &lt;b&gt;') && mail.html.includes('Wiki &amp; Co') && !mail.html.includes('<b>'));
});

test('a code that is not 6 digits, or a link that is not http(s), is refused', () => {
  for (const code of ['12345', '1234567', 'abcdef', '', '12 456']) {
    assert.throws(() => renderMail('magic-link-login', { userName: 'Ada', applicationName: 'Wiki', link, code, expiresInMinutes: 15 }), { name: 'Invalid' });
  }
  assert.throws(() => renderMail('magic-link-login', { userName: 'Ada', applicationName: 'Wiki', link: 'javascript:alert(1)', code: '123456', expiresInMinutes: 15 }), { name: 'Invalid' });
});
