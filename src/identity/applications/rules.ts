/**
 * The rules of an application's free text, whichever face writes it (admin API, console, CLI): its name.
 * The URL lists have their own rules (urls.ts). The applications service runs them on every write.
 */
import { checkText, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';

export const APPLICATION_NAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };

export const checkApplicationName = (name: string): BrokenRule | undefined => checkText('name', name, APPLICATION_NAME);
