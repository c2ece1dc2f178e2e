/**
 * The header parser of the protection plugin: DESIGN.md's dispatch row by row, then property tests
 * (random bytes, unicode, huge and duplicated headers) asserting it only ever answers a credential or
 * an Unauthenticated with one of the spec's reasons.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { Unauthenticated } from '../../../src/lib/errors.ts';
import { credentialReader, displayHeader, type Credential, type CredentialHeaders } from '../../../src/site/protect/credentials.ts';

const ALL: CredentialHeaders = { provider: true, jwtHeader: 'authorization', apiKeyHeader: 'authorization', apiTokens: true };
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln';
const KEY = 'lksk_0123456789abcdef';
const TOKEN = 'lkat_0123456789abcdef';
const readCredential = (headers: IncomingHttpHeaders, on: CredentialHeaders): Credential => credentialReader(on)(headers);
const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

function rejects(headers: IncomingHttpHeaders, on: CredentialHeaders, reason: string, method: string, message: string): void {
  assert.throws(() => readCredential(headers, on), (error: unknown) => {
    assert.ok(error instanceof Unauthenticated, String(error));
    assert.deepEqual({ reason: error.reason, method: error.method, message: error.message }, { reason, method, message });
    return true;
  });
}

describe('dispatch (all four methods on, one Authorization header)', () => {
  test('no credential header, or an empty one: MISSING_AUTHORIZATION_HEADER naming every header', () => {
    const message = 'Authorization or access_token or id_token header is missing.';
    rejects({}, ALL, 'MISSING_AUTHORIZATION_HEADER', 'jwt', message);
    rejects({ authorization: '' }, ALL, 'MISSING_AUTHORIZATION_HEADER', 'jwt', message);
    rejects({ authorization: '   ' }, ALL, 'MISSING_AUTHORIZATION_HEADER', 'jwt', message);
    rejects({ access_token: '' }, ALL, 'MISSING_AUTHORIZATION_HEADER', 'jwt', message);
  });

  test('access_token and id_token go to the provider, with or without "Bearer"; access_token first', () => {
    assert.deepEqual(readCredential({ access_token: 'opaque-123' }, ALL), { method: 'provider', kind: 'access_token', token: 'opaque-123' });
    assert.deepEqual(readCredential({ access_token: 'Bearer opaque-123' }, ALL), { method: 'provider', kind: 'access_token', token: 'opaque-123' });
    assert.deepEqual(readCredential({ id_token: JWT }, ALL), { method: 'provider', kind: 'id_token', token: JWT });
    assert.deepEqual(readCredential({ id_token: JWT, access_token: 'a', authorization: `Bearer ${JWT}` }, ALL),
      { method: 'provider', kind: 'access_token', token: 'a' });
  });

  test('a provider header with another scheme: INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE for the provider', () => {
    rejects({ access_token: 'Basic abc' }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'provider', 'access_token header token type must be Bearer.');
    rejects({ id_token: 'Token abc' }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'provider', 'id_token header token type must be Bearer.');
  });

  test('Bearer with a dot is a JWT, lkat_ an API token, anything else an API key; the scheme is case-insensitive', () => {
    assert.deepEqual(readCredential({ authorization: `Bearer ${JWT}` }, ALL), { method: 'jwt', token: JWT });
    assert.deepEqual(readCredential({ authorization: `bearer ${JWT}` }, ALL), { method: 'jwt', token: JWT });
    assert.deepEqual(readCredential({ authorization: `BEARER   ${JWT}` }, ALL), { method: 'jwt', token: JWT });
    assert.deepEqual(readCredential({ authorization: `Bearer ${KEY}` }, ALL), { method: 'apikey', key: KEY });
    assert.deepEqual(readCredential({ authorization: 'Bearer' }, ALL), { method: 'apikey', key: '' });
    assert.deepEqual(readCredential({ authorization: `Bearer ${TOKEN}` }, ALL), { method: 'apitoken', credential: { scheme: 'bearer', token: TOKEN } });
  });

  test('Basic username:secret is an API token whatever the secret; a Basic value that is no such pair is a wrong token type (issue 22 item 6)', () => {
    assert.deepEqual(readCredential({ authorization: basic(`alice:${TOKEN}`) }, ALL),
      { method: 'apitoken', credential: { scheme: 'basic', username: 'alice', token: TOKEN } });
    assert.deepEqual(readCredential({ authorization: basic('alice:violet-otter') }, ALL),
      { method: 'apitoken', credential: { scheme: 'basic', username: 'alice', token: 'violet-otter' } });
    assert.deepEqual(readCredential({ authorization: basic('alice:') }, ALL),
      { method: 'apitoken', credential: { scheme: 'basic', username: 'alice', token: '' } });
    const wrongType = ['INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.'] as const;
    rejects({ authorization: 'Basic %%%' }, ALL, ...wrongType);
    rejects({ authorization: basic('no-colon') }, ALL, ...wrongType);
    rejects({ authorization: `Basic ${JWT}` }, ALL, ...wrongType);
    rejects({ authorization: 'Basic x' }, ALL, ...wrongType);
  });

  test('Basic values are UTF-8 base64 as browsers encode them: padding may be left out, broken text is refused', () => {
    const encoded = Buffer.from(`zoë.ünïco:${TOKEN}`, 'utf8').toString('base64');
    const expected = { method: 'apitoken', credential: { scheme: 'basic', username: 'zoë.ünïco', token: TOKEN } };
    assert.match(encoded, /==$/);
    assert.deepEqual(readCredential({ authorization: `Basic ${encoded}` }, ALL), expected);
    assert.deepEqual(readCredential({ authorization: `Basic ${encoded.replace(/=+$/, '')}` }, ALL), expected);
    // 'a:bc' with an incomplete padding is not base64; Latin-1 bytes (0xE9) are a pair, but hold no token of ours.
    rejects({ authorization: 'Basic YTpiYw=' }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
    rejects({ authorization: `Basic ${Buffer.from(`ren\xe9:${TOKEN}`, 'latin1').toString('base64')}` }, ALL, 'INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
  });

  test('another scheme, or a bare value in Authorization: wrong token type, reported for the JWT method (400)', () => {
    rejects({ authorization: `Token ${JWT}` }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
    rejects({ authorization: JWT }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
    rejects({ authorization: 'Digest username="a"' }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
  });

  test('repeated headers (Node joins them with ", ") are two values where one is allowed: refused', () => {
    rejects({ access_token: ['a', 'b'] } as IncomingHttpHeaders, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'provider', 'access_token header token type must be Bearer.');
    // A JWT with ", Bearer " inside: the JWT verifier refuses it as SEGMENT_FAULT (see jwt-auth.test.ts).
    assert.deepEqual(readCredential({ authorization: [`Bearer ${JWT}`, `Bearer ${JWT}`] } as unknown as IncomingHttpHeaders, ALL),
      { method: 'jwt', token: `${JWT}, Bearer ${JWT}` });
  });
});

describe('methods switched off behave as if absent', () => {
  test('provider off: access_token is ignored', () => {
    rejects({ access_token: 'x' }, { ...ALL, provider: false }, 'MISSING_AUTHORIZATION_HEADER', 'jwt', 'Authorization header is missing.');
  });

  test('API keys off: a dotless Bearer value is a malformed JWT', () => {
    rejects({ authorization: `Bearer ${KEY}` }, { ...ALL, apiKeyHeader: undefined }, 'SEGMENT_FAULT', 'jwt', 'JWT format is incorrect.');
  });

  test('JWT off: a dotted Bearer value is an API key, and a wrong scheme is reported for API keys (401)', () => {
    const on = { ...ALL, jwtHeader: undefined };
    assert.deepEqual(readCredential({ authorization: `Bearer ${JWT}` }, on), { method: 'apikey', key: JWT });
    rejects({ authorization: `Token ${KEY}` }, on, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'apikey', 'Authorization header token type must be Bearer.');
  });

  test('API tokens off: Basic is a wrong token type and lkat_ values are API keys', () => {
    const on = { ...ALL, apiTokens: false };
    rejects({ authorization: basic('alice:x') }, on, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
    assert.deepEqual(readCredential({ authorization: `Bearer ${TOKEN}` }, on), { method: 'apikey', key: TOKEN });
  });

  test('only API tokens on: anything but Basic or Bearer lkat_ is an invalid API token', () => {
    const on = { provider: false, apiTokens: true };
    rejects({ authorization: `Bearer ${JWT}` }, on, 'INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
    rejects({ authorization: 'Token x' }, on, 'INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.');
    rejects({}, on, 'MISSING_AUTHORIZATION_HEADER', 'apitoken', 'Authorization header is missing.');
  });
});

describe('a Basic value that is not an API token, for every set of enabled methods (issue 13 item 11, issue 22 item 6)', () => {
  // Every non-empty subset of the four methods, all on the default headers (LATCHKEY_SITE_METHODS).
  const METHODS = ['jwt', 'apikey', 'provider', 'apitoken'] as const;
  const sets = Array.from({ length: 15 }, (_, i) => METHODS.filter((_m, bit) => (i + 1) & (1 << bit)));
  const config = (set: readonly string[]): CredentialHeaders => ({
    provider: set.includes('provider'),
    jwtHeader: set.includes('jwt') ? 'authorization' : undefined,
    apiKeyHeader: set.includes('apikey') ? 'authorization' : undefined,
    apiTokens: set.includes('apitoken'),
  });
  /**
   * The spec's wrong-token-type row for the method the Authorization header is for (JWT, else API key, else
   * the provider beside API tokens), or the API-token error when only API tokens read it.
   */
  const expected = (set: readonly string[]): [string, string, string] => {
    // Provider alone does not read Authorization at all: its own headers are missing.
    if (set.length === 1 && set[0] === 'provider') return ['MISSING_AUTHORIZATION_HEADER', 'provider', 'access_token or id_token header is missing.'];
    const method = set.includes('jwt') ? 'jwt' : set.includes('apikey') ? 'apikey' : set.includes('provider') ? 'provider' : undefined;
    return method ? ['INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', method, 'Authorization header token type must be Bearer.']
      : ['INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.'];
  };
  const forms: [string, string][] = [
    ['Basic <a JWT>', `Basic ${JWT}`],
    ['Basic x', 'Basic x'],
    ['Basic alone', 'Basic'],
    ['Basic with spaces inside', 'Basic a b'],
    ['Basic not base64', 'Basic %%%'],
    ['Basic of no colon', basic('alice')],
    ['Basic of an empty username', basic(`:${TOKEN}`)],
    ['lower-case basic', `basic ${JWT}`],
    ['Token scheme', `Token ${KEY}`],
  ];
  /** Base64 of `username:secret` with a secret that is no API token: the API-token error where API tokens are on. */
  const pairs: [string, string][] = [
    ['Basic of username:password', basic('alice:violet-otter')],
    ['Basic of username:<an API key>', basic(`alice:${KEY}`)],
    ['Basic of username:<a JWT>', basic(`alice:${JWT}`)],
    ['Basic of username:<prefix without underscore>', basic('alice:lkatx')],
    ['Basic of username:<empty>', basic('alice:')],
    ['Basic of not UTF-8', `Basic ${Buffer.from([0x61, 0x3a, 0xff]).toString('base64')}`],
    ['Basic of a control character', basic('alice:x\ty')],
  ];
  const INVALID_API_TOKEN = ['INVALID_API_TOKEN', 'apitoken', 'The provided API key is invalid.'];
  for (const set of sets) {
    test(`methods ${set.join(',')}`, () => {
      const on = config(set);
      for (const [label, value] of [...forms, ...pairs]) {
        const pair = pairs.some(([, v]) => v === value);
        try {
          const credential = readCredential({ authorization: value }, on);
          // A readable pair goes to the API-token verifier, which refuses a secret it never issued.
          assert.ok(pair && on.apiTokens && credential.method === 'apitoken', `${label}: read as ${JSON.stringify(credential)}`);
        } catch (error) {
          if (error instanceof assert.AssertionError) throw error;
          assert.ok(error instanceof Unauthenticated, `${label}: ${String(error)}`);
          assert.deepEqual([error.reason, error.method, error.message], pair && on.apiTokens ? INVALID_API_TOKEN : expected(set), label);
        }
      }
      // The API token itself still reads as one wherever API tokens are on.
      const good = basic(`alice:${TOKEN}`);
      if (on.apiTokens) {
        assert.deepEqual(readCredential({ authorization: good }, on), { method: 'apitoken', credential: { scheme: 'basic', username: 'alice', token: TOKEN } });
      } else {
        assert.throws(() => readCredential({ authorization: good }, on), (error: unknown) =>
          error instanceof Unauthenticated && error.reason === expected(set)[0] && error.method === expected(set)[1]);
      }
    });
  }
});

describe('custom header names', () => {
  const on: CredentialHeaders = { provider: false, jwtHeader: 'x-site-jwt', apiKeyHeader: 'x-api-key', apiTokens: false };

  test('a custom header takes the bare value or "Bearer <value>"', () => {
    assert.deepEqual(readCredential({ 'x-site-jwt': JWT }, on), { method: 'jwt', token: JWT });
    assert.deepEqual(readCredential({ 'x-site-jwt': `Bearer ${JWT}` }, on), { method: 'jwt', token: JWT });
    assert.deepEqual(readCredential({ 'x-api-key': KEY }, on), { method: 'apikey', key: KEY });
  });

  test('Authorization is not read when no method uses it; the missing-header error names the configured headers', () => {
    rejects({ authorization: `Bearer ${JWT}` }, on, 'MISSING_AUTHORIZATION_HEADER', 'jwt', 'X-Site-Jwt or X-Api-Key header is missing.');
  });

  test('a dotless value in the JWT header (API keys elsewhere) is SEGMENT_FAULT; a wrong scheme names the header', () => {
    rejects({ 'x-site-jwt': KEY }, on, 'SEGMENT_FAULT', 'jwt', 'JWT format is incorrect.');
    rejects({ 'x-api-key': `Token ${KEY}` }, on, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'apikey', 'X-Api-Key header token type must be Bearer.');
  });

  test('displayHeader capitalises each word', () => {
    assert.equal(displayHeader('authorization'), 'Authorization');
    assert.equal(displayHeader('x-api-key'), 'X-Api-Key');
  });
});

describe('properties: any header bytes give a credential or a spec reason, never another error', () => {
  const REASONS = new Set(['MISSING_AUTHORIZATION_HEADER', 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'SEGMENT_FAULT', 'INVALID_API_TOKEN']);
  const configs = fc.record({
    provider: fc.boolean(),
    jwtHeader: fc.constantFrom(undefined, 'authorization', 'x-jwt'),
    apiKeyHeader: fc.constantFrom(undefined, 'authorization', 'x-api-key'),
    apiTokens: fc.boolean(),
  });
  const value = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc.string({ unit: 'grapheme', maxLength: 100 }),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
    fc.tuple(fc.constantFrom('Bearer ', 'Basic ', 'bearer  ', 'Token ', ''), fc.string({ unit: 'binary', maxLength: 200 })).map(([a, b]) => a + b),
    fc.tuple(fc.constantFrom('Basic ', 'Bearer lkat_', 'Bearer lksk_'), fc.uint8Array({ maxLength: 200 })).map(([a, b]) => a + Buffer.from(b).toString('base64')),
  );
  const headerValue = fc.oneof(value, fc.array(value, { minLength: 1, maxLength: 4 }));
  const headers = fc.dictionary(fc.constantFrom('authorization', 'access_token', 'id_token', 'x-jwt', 'x-api-key', 'other'), headerValue);

  test('random headers under random configurations', () => {
    fc.assert(fc.property(headers, configs, (h, on) => {
      try {
        const credential = readCredential(h as IncomingHttpHeaders, on);
        assert.ok(['jwt', 'apikey', 'apitoken', 'provider'].includes(credential.method));
      } catch (error) {
        assert.ok(error instanceof Unauthenticated, `unexpected ${String(error)}`);
        assert.ok(REASONS.has(error.reason), error.reason);
        assert.ok(error.message.length < 200, 'descriptions never echo the header value');
      }
    }), { numRuns: 2000 });
  });

  test('a megabyte header is answered at once', () => {
    const huge = 'Bearer ' + 'a.'.repeat(512 * 1024);
    assert.deepEqual(readCredential({ authorization: huge }, ALL), { method: 'jwt', token: huge.slice(7) });
    rejects({ authorization: 'Basic ' + 'A'.repeat(1024 * 1024) }, ALL, 'INVALID_AUTHORIZATION_HEADER_TOKEN_TYPE', 'jwt', 'Authorization header token type must be Bearer.');
  });
});
