/** An application's form values and its broken rules as the console's forms name them. */
import type { BrokenRule } from '../../../lib/text-rules.ts';
import { inWords } from '../../forms.ts';
import { LIST_WORDS, SAML_WORDS, type SamlFieldName, type UrlListName } from './words.ts';

/** One URL a line: blank lines and the spaces around a URL do not count. */
export const urlLines = (text: string): string[] => text.split(/[\r\n]+/).map((l) => l.trim()).filter(Boolean);

const clip = (text: string) => (text.length > 80 ? `${text.slice(0, 80)}…` : text);

/**
 * The message beside a field for a broken rule of the applications service (`name`, `returnUrls`,
 * `returnUrls[2]`, `entityId`, `acsUrls[0]`, …); `nameLabel` is the name field's label, `listLabel` overrides a list's.
 */
export function describeProblem(problem: BrokenRule, lists: Partial<Record<UrlListName | 'acsUrls', string[]>>, nameLabel: string, listLabel?: string): { list: UrlListName | SamlFieldName | 'name'; message: string } {
  if (problem.field === 'name') return { list: 'name', message: `${nameLabel} ${inWords(problem.reason)}` };
  const [, list, index] = /^(returnUrls|redirectUris|loginUrls|postLogoutRedirectUris|acsUrls)(?:\[(\d+)\])?$/.exec(problem.field) ?? [];
  if (list === undefined && problem.field in SAML_WORDS) {
    return { list: problem.field as SamlFieldName, message: `${SAML_WORDS[problem.field as SamlFieldName]} ${problem.reason}` };
  }
  const name = (list ?? 'returnUrls') as UrlListName | 'acsUrls';
  const label = name === 'acsUrls' ? SAML_WORDS.acsUrls : listLabel ?? LIST_WORDS[name];
  if (index === undefined) return { list: name, message: `${label} ${problem.reason}` };
  const url = lists[name]?.[Number(index)] ?? '';
  return { list: name, message: `${label}: ${clip(url)} ${problem.reason}` };
}
