/**
 * The rules of a webhook endpoint, whichever face creates it (admin API, console, CLI): its URL
 * (https, or http when allowed; no credentials; a literal non-public address refused unless
 * allowed) and its event prefixes. Names are checked again at each delivery, after resolution.
 */
import { Invalid } from '../lib/errors.ts';
import { isNonPublicAddress, literalAddress } from './targets.ts';

export const WEBHOOK_URL_MAX_LENGTH = 2000;
export const WEBHOOK_EVENTS_MAX = 50;
/** `*`, or an action prefix such as `user.` or `user.created`. */
export const WEBHOOK_EVENT_PATTERN = '^(\\*|[a-z][a-z0-9_.]{0,99})$';

export interface TargetPolicy {
  /** LATCHKEY_WEBHOOKS_ALLOW_HTTP */
  allowHttp: boolean;
  /** LATCHKEY_WEBHOOKS_ALLOW_PRIVATE */
  allowPrivate: boolean;
}

/**
 * @returns the URL, parsed.
 * @throws Invalid('url', …) when it may not receive webhooks under `policy`.
 */
export function checkWebhookUrl(raw: string, policy: TargetPolicy): URL {
  let url: URL;
  try {
    if (raw.length > WEBHOOK_URL_MAX_LENGTH) throw new Error('too long');
    url = new URL(raw);
  } catch {
    throw new Invalid('url', `must be an absolute https:// URL of at most ${WEBHOOK_URL_MAX_LENGTH} characters`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    throw new Invalid('url', policy.allowHttp ? 'must start with https:// or http://' : 'must start with https:// (http:// needs LATCHKEY_WEBHOOKS_ALLOW_HTTP=true)');
  }
  if (url.username || url.password) throw new Invalid('url', 'must not hold a user name or password');
  const address = literalAddress(url);
  if (!policy.allowPrivate && (url.hostname === 'localhost' || url.hostname.endsWith('.localhost') || (address !== undefined && isNonPublicAddress(address)))) {
    throw new Invalid('url', 'must not point to a loopback, private or link-local address (LATCHKEY_WEBHOOKS_ALLOW_PRIVATE=true allows it)');
  }
  return url;
}

/** @throws Invalid('events', …) unless 1..50 prefixes, each `*` or lower-case action characters. */
export function checkWebhookEvents(events: unknown): string[] {
  const pattern = new RegExp(WEBHOOK_EVENT_PATTERN);
  if (!Array.isArray(events) || events.length === 0 || events.length > WEBHOOK_EVENTS_MAX || !events.every((e) => typeof e === 'string' && pattern.test(e))) {
    throw new Invalid('events', `must be 1 to ${WEBHOOK_EVENTS_MAX} action prefixes such as "user." or "user.created", or ["*"] for every event`);
  }
  return [...new Set(events as string[])];
}

/** Whether an endpoint subscribed to `events` receives `action`. */
export const matchesEvents = (events: string[], action: string): boolean => events.some((prefix) => prefix === '*' || action.startsWith(prefix));
