/** JSON schemas shared by admin routes: the customer key and batch paging. */
import { TRIMMED_LINE } from '../lib/text-rules.ts';

/** The spec's samples send customerKey both as a number and as a quoted number. */
export const customerKeySchema = {
  anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: '^[0-9]{1,20}$' }],
} as const;

export const batchProperties = (maxBatchSize: number) => ({
  batchSize: { type: 'integer', minimum: 1, maximum: maxBatchSize },
  batchNo: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
}) as const;

/** A trimmed, non-empty single-line string. */
export const nameString = (maxLength: number) => ({ type: 'string', minLength: 1, maxLength, pattern: TRIMMED_LINE }) as const;

export const emailString = { type: 'string', minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' } as const;

/** `YYYY-MM-DDTHH:MMZ` (UTC), the spec's user date format. */
export function toMinuteUtc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16) + 'Z';
}
