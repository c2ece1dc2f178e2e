/**
 * The URL rule of applications' returnUrls, redirectUris and loginUrls, and of the magic link's
 * redirectUri (spec, Magic links): absolute http(s), at most 2048 characters, no whitespace,
 * semicolons or commas. Rejects relative URLs, other schemes, user info and fragments.
 */
import { Invalid } from '../../lib/errors.ts';

export const MAX_URL_LENGTH = 2048;
export const MAX_URLS_PER_LIST = 20;

const FORBIDDEN = /[\s;,]/;

/** Why `value` breaks the rule, or undefined when it is an allowed URL. */
export function urlProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  if (!/^https?:\/\//i.test(value)) return 'must start with https:// or http://';
  if (FORBIDDEN.test(value)) return 'must not contain whitespace, semicolons or commas';
  if (!URL.canParse(value)) return 'must be an absolute URL';
  const url = new URL(value);
  // Credentials in a redirect target end up in logs and history; a fragment cannot carry the
  // response (OAuth 2.0 RFC 6749 §3.1.2: the redirection endpoint must not include one).
  if (url.username || url.password) return 'must not contain user information';
  if (value.includes('#')) return 'must not contain a fragment (#)';
  return undefined;
}

/**
 * Checks every URL of a list and returns it without duplicates (first spelling kept).
 * @throws Invalid naming the list and the index of the first bad URL.
 */
export function checkUrlList(field: string, urls: string[]): string[] {
  if (urls.length > MAX_URLS_PER_LIST) throw new Invalid(field, `must hold at most ${MAX_URLS_PER_LIST} URLs`);
  urls.forEach((url, i) => {
    const problem = urlProblem(url);
    if (problem) throw new Invalid(`${field}[${i}]`, problem);
  });
  return [...new Set(urls)];
}
