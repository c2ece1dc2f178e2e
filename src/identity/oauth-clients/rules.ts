/**
 * The rules of an OAuth client's free text, whichever face writes it (admin API, console, CLI): its name.
 * The OAuth clients service runs them on every create.
 */
import { checkText, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';

export const OAUTH_CLIENT_NAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };

export const checkOauthClientName = (name: string): BrokenRule | undefined => checkText('name', name, OAUTH_CLIENT_NAME);
