/**
 * One import record to a user write: the users routes' own schema checks the shape of the fields, the
 * users service checks every rule of users/rules.ts on the write (as for every face), the password rule
 * is the service's, and the hash must be one login can verify. Empty values are absent values: they keep
 * what is stored. A CSV cell export neutralised against spreadsheet formulas is read back as it was.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Invalid } from '../../lib/errors.ts';
import { checkPasswordRule, hashFormat } from '../../lib/passwords.ts';
import { badCharacters, enforce, textSchema, type BrokenRule } from '../../lib/text-rules.ts';
import { checkGroupName, GROUP_NAME } from '../groups/rules.ts';
import { restoreFormula } from './csv-formulas.ts';
import { checkPasswordText } from './rules.ts';
import { BadHeader, type ImportFormat, type ImportRecord } from './import-rows.ts';
import { userWriteProperties } from './routes.ts';
import type { UserInput } from './types.ts';
import { readCustomAttributes } from './wire.ts';

export interface ImportRow {
  line: number;
  /** The fields to write, without the password (hashed or kept by the importer). */
  input: UserInput;
  password?: string;
  passwordHash?: string;
}

const { customerKey: _customerKey, groups: _groups, ...fieldProperties } = userWriteProperties;

const rowSchema = {
  type: 'object',
  required: ['username'],
  additionalProperties: false,
  properties: {
    ...fieldProperties,
    groups: { type: 'array', maxItems: 100, items: textSchema(GROUP_NAME) },
    passwordHash: { type: 'string', maxLength: 1024 },
  },
} as const;

export const IMPORT_COLUMNS: readonly string[] = Object.keys(rowSchema.properties);

/**
 * Compiled when the first row is checked, not when the module loads: compiling takes tens of
 * milliseconds, and most processes that load it (the server, every other CLI command) import no file.
 */
let checkRow: ValidateFunction | undefined;

/** @throws BadHeader naming an unknown or repeated column, or a missing username column. */
export function checkColumns(columns: string[]): void {
  const seen = new Set<string>();
  for (const column of columns) {
    if (!IMPORT_COLUMNS.includes(column)) throw new BadHeader(`unknown column "${column}" (columns: ${IMPORT_COLUMNS.filter((c) => !c.startsWith('customAttribute')).join(', ')}, customAttribute1..customAttribute50)`);
    if (seen.has(column)) throw new BadHeader(`column "${column}" appears twice`);
    seen.add(column);
  }
  if (!seen.has('username')) throw new BadHeader('the header has no "username" column');
}

/** As the admin API words a schema failure (identity/errors.ts): the field, then what is wrong. */
function describe(error: ErrorObject): string {
  const where = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') return `${(error.params as { missingProperty: string }).missingProperty} is required`;
  if (error.keyword === 'additionalProperties') return `${(error.params as { additionalProperty: string }).additionalProperty} is not allowed`;
  return `${where || 'row'} ${error.message ?? 'is invalid'}`;
}

/** Empty strings, nulls and empty group lists are absent; CSV lists groups as `a;b`. */
function presentValues(values: Record<string, unknown>, format: ImportFormat): Record<string, unknown> {
  const present: Record<string, unknown> = {};
  for (const [key, given] of Object.entries(values)) {
    const value = format === 'csv' && typeof given === 'string' ? restoreFormula(given) : given;
    if (value === undefined || value === null || value === '') continue;
    if (key === 'groups' && format === 'csv' && typeof value === 'string') {
      const names = value.split(';').map((name) => name.trim()).filter((name) => name !== '');
      if (names.length > 0) present.groups = names;
      continue;
    }
    if (key === 'groups' && Array.isArray(value) && value.length === 0) continue;
    present[key] = value;
  }
  return present;
}

/**
 * Control characters and lone surrogates in any value, before the shape is checked: the order the admin
 * API checks a body in (http/input-checks.ts), so a row gets the reason the API gives for the same value.
 */
function checkCharacters(values: Record<string, unknown>): BrokenRule | undefined {
  for (const [key, value] of Object.entries(values)) {
    const texts = typeof value === 'string' ? [[key, value]] : Array.isArray(value) ? value.map((v, i) => [`${key}[${i}]`, v]) : [];
    for (const [field, text] of texts) {
      const reason = typeof text === 'string' ? badCharacters(text) : undefined;
      if (reason) return { field, reason };
    }
  }
  return undefined;
}

/** @throws Invalid naming the first thing wrong with the row. */
export function toImportRow(record: Extract<ImportRecord, { values: object }>, format: ImportFormat): ImportRow {
  const values = presentValues(record.values, format);
  enforce(checkCharacters(values));
  checkRow ??= new Ajv({ allErrors: false, strict: false }).compile(rowSchema);
  if (!checkRow(values)) throw new Invalid(...splitMessage(describe(checkRow.errors![0])));
  const row = values as Record<string, string> & { groups?: string[] };
  if (row.password !== undefined && row.passwordHash !== undefined) throw new Invalid('passwordHash', 'cannot be given with password');
  if (row.passwordHash !== undefined && hashFormat(row.passwordHash) === undefined) {
    throw new Invalid('passwordHash', 'must be an argon2id or argon2i PHC string, or a bcrypt $2a$, $2b$ or $2y$ hash');
  }
  enforce(checkPasswordText(row.password));
  if (row.password !== undefined) checkPasswordRule(row.password);
  // Checked here, not only when the batch creates missing groups: a bad name fails its row alone.
  row.groups?.forEach((name, i) => enforce(checkGroupName(`groups.${i}`, name)));
  return {
    line: record.line,
    input: {
      username: row.username,
      email: row.email,
      firstName: row.firstName,
      lastName: row.lastName,
      phone: row.phone,
      alternateEmail: row.alternateEmail,
      groups: row.groups?.map((name) => ({ name, attributes: [] })),
      customAttributes: readCustomAttributes(row),
    },
    password: row.password,
    passwordHash: row.passwordHash,
  };
}

/** Invalid takes the field and the rule apart. */
function splitMessage(message: string): [string, string] {
  const space = message.indexOf(' ');
  return [message.slice(0, space), message.slice(space + 1)];
}
