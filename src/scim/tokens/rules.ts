/**
 * The rules of a SCIM token's free text, whichever face writes it (admin API, console, CLI): its name.
 * The SCIM tokens service runs them on every create.
 */
import { checkText, TRIMMED_LINE, type BrokenRule, type TextRule } from '../../lib/text-rules.ts';

export const SCIM_TOKEN_NAME: TextRule = { minLength: 1, maxLength: 100, pattern: TRIMMED_LINE };

export const checkScimTokenName = (name: string): BrokenRule | undefined => checkText('name', name, SCIM_TOKEN_NAME);
