/** Paging of list answers (RFC 7644 §3.4.2.4) and the ListResponse envelope (§3.4.2). */
import { ScimError } from './errors.ts';
import { LIST_RESPONSE_SCHEMA, MAX_RESULTS } from './schemas.ts';

export interface Paging {
  /** 1-based. */
  startIndex: number;
  count: number;
}

function integerParam(query: Record<string, unknown>, name: string): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || !/^-?[0-9]{1,15}$/.test(raw.trim())) throw new ScimError(400, 'invalidValue', `${name} must be an integer`);
  return Number(raw.trim());
}

/**
 * startIndex below 1 is 1; count below 0 is 0 and above MAX_RESULTS is MAX_RESULTS (§3.4.2.4: the
 * provider returns at most its maximum). Absent count: MAX_RESULTS. @throws ScimError invalidValue
 */
export function readPaging(query: Record<string, unknown>): Paging {
  const startIndex = Math.max(1, integerParam(query, 'startIndex') ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, integerParam(query, 'count') ?? MAX_RESULTS));
  return { startIndex, count };
}

export function listResponse(resources: unknown[], totalResults: number, startIndex: number) {
  return { schemas: [LIST_RESPONSE_SCHEMA], totalResults, startIndex, itemsPerPage: resources.length, Resources: resources };
}

/** The names in a comma-separated attributes or excludedAttributes parameter, lower case. */
export function attributeNames(value: unknown): Set<string> {
  if (typeof value !== 'string') return new Set();
  return new Set(value.split(',').map((name) => name.trim().toLowerCase()).filter(Boolean));
}
