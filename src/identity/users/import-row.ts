/**
 * One import record to a user write: the users routes' own schema checks the fields (lengths, e-mail
 * and phone formats), the password rule is the service's, and the hash must be one login can verify.
 * Empty values are absent values: they keep what is stored.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { nameString } from '../../http/schemas.ts';
import { Invalid } from '../../lib/errors.ts';
import { checkPasswordRule, hashFormat } from '../../lib/passwords.ts';
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
    groups: { type: 'array', maxItems: 100, items: nameString(100) },
    passwordHash: { type: 'string', maxLength: 1024 },
  },
} as const;

export const IMPORT_COLUMNS: readonly string[] = Object.keys(rowSchema.properties);

const checkRow = new Ajv({ allErrors: false, strict: false }).compile(rowSchema);

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
  for (const [key, value] of Object.entries(values)) {
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

/** @throws Invalid naming the first thing wrong with the row. */
export function toImportRow(record: Extract<ImportRecord, { values: object }>, format: ImportFormat): ImportRow {
  const values = presentValues(record.values, format);
  if (!checkRow(values)) throw new Invalid(...splitMessage(describe(checkRow.errors![0])));
  const row = values as Record<string, string> & { groups?: string[] };
  if (row.password !== undefined && row.passwordHash !== undefined) throw new Invalid('passwordHash', 'cannot be given with password');
  if (row.passwordHash !== undefined && hashFormat(row.passwordHash) === undefined) {
    throw new Invalid('passwordHash', 'must be an argon2id or argon2i PHC string, or a bcrypt $2a$, $2b$ or $2y$ hash');
  }
  if (row.password !== undefined) checkPasswordRule(row.password);
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
