/** The rules of a passkey's name, whichever face names it (the account page, the sign-in's enrolment, the console). */
import { checkText, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';

export const PASSKEY_NAME: TextRule = { minLength: 1, maxLength: 64, pattern: TRIMMED_LINE };

export const checkPasskeyName = (name: string): BrokenRule | undefined => checkText('name', name, PASSKEY_NAME);

/**
 * The name a passkey gets when none is given: the browser's name and the day, e.g. "Chrome on Linux,
 * 2026-11-27". Read from the User-Agent only to label the passkey for its owner, never to decide anything.
 */
export function defaultPasskeyName(userAgent: string | undefined, now: number): string {
  const day = new Date(now).toISOString().slice(0, 10);
  const ua = userAgent ?? '';
  const browser = /Edg\//.test(ua) ? 'Edge'
    : /Firefox\//.test(ua) ? 'Firefox'
    : /(Chrome|Chromium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari'
    : undefined;
  const system = /Android/.test(ua) ? 'Android'
    : /iPhone|iPad/.test(ua) ? 'iOS'
    : /Mac OS X/.test(ua) ? 'macOS'
    : /Windows/.test(ua) ? 'Windows'
    : /Linux/.test(ua) ? 'Linux'
    : undefined;
  const label = browser && system ? `${browser} on ${system}` : browser ?? system ?? 'Passkey';
  return `${label}, ${day}`;
}
