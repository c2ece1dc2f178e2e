/**
 * What every route of both faces refuses before its handler: JSON that is not UTF-8 (decoded
 * strictly, not into U+FFFD), NUL characters and lone surrogates anywhere in the body, query or
 * path, nesting deeper than MAX_BODY_DEPTH; and multipart bodies that cannot be read are the
 * client's fault (400), not ours.
 */
import { errorCodes, type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import secureJson from 'secure-json-parse';
import { Invalid, LatchkeyError } from '../lib/errors.ts';

// Control characters have no place in identity data and are how header/log injection starts.
const CONTROL = /[\u0000-\u001f\u007f]/;
// With the u flag a paired surrogate is one code point, so this matches only lone halves: text
// that is not Unicode, which the database would silently turn into U+FFFD.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Real bodies nest four levels deep; recursion over attacker-chosen depth ends in a stack overflow. */
export const MAX_BODY_DEPTH = 32;

/** Why a body was refused before schema validation: the field's path and the rule it breaks. */
export interface BadInput {
  path: string;
  rule: string;
}

/**
 * Normalises a parsed JSON body before schema validation: `null` in an object property means the
 * property is absent (clients send `"phone": null`); strings (values and keys) with control
 * characters or lone surrogates are refused, and so is nesting deeper than MAX_BODY_DEPTH.
 * @returns the first problem found, or undefined.
 */
export function checkBody(value: unknown, multilineFields: readonly string[] = []): BadInput | undefined {
  return walk(value, '', 0, multilineFields);
}

/**
 * Text of several lines (a PEM certificate, an XML document) in a top-level field a route names: line
 * breaks and tabs allowed there, every other control character still refused.
 */
const badMultilineText = (text: string) => badText(text.replace(/[\t\n\r]/g, ''));

function badText(text: string): string | undefined {
  if (CONTROL.test(text)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode text';
  return undefined;
}

function walk(value: unknown, path: string, depth: number, multilineFields: readonly string[] = []): BadInput | undefined {
  if (typeof value === 'string') {
    const rule = badText(value);
    return rule ? { path: path || 'body', rule } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_BODY_DEPTH) return { path: path || 'body', rule: `must not nest deeper than ${MAX_BODY_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = walk(value[i], `${path}[${i}]`, depth + 1);
      if (bad) return bad;
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const child = record[key];
    const childPath = path ? `${path}.${key}` : key;
    const keyRule = badText(key);
    if (keyRule) return { path: childPath, rule: keyRule };
    if (child === null) { delete record[key]; continue; }
    if (typeof child === 'string' && multilineFields.includes(key)) {
      const rule = badMultilineText(child);
      if (rule) return { path: childPath, rule };
      continue;
    }
    const bad = walk(child, childPath, depth + 1);
    if (bad) return bad;
  }
  return undefined;
}

// Text that is not UTF-8, and NUL characters, which PostgreSQL cannot store in text (a 500 there)
// and SQLite would store.

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lossyUtf8 = new TextDecoder('utf-8');
const NUL = '\u0000';
const REPLACEMENT = '\ufffd';
const FORM_TYPES = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i;

const kPhase = Symbol('latchkey.phase');
type Phase = 'body' | 'handler';

/**
 * True when `error` came from reading the request body of a multipart request (busboy's plain
 * Errors: no boundary, a cut-off form): the client's bytes, so a 400, not a 500.
 */
export function isMalformedMultipart(request: FastifyRequest, error: unknown): boolean {
  if ((request as unknown as Record<symbol, Phase>)[kPhase] !== 'body') return false;
  if (!(error instanceof Error) || error instanceof LatchkeyError) return false;
  if (typeof (error as Partial<FastifyError>).statusCode === 'number' || (error as Partial<FastifyError>).validation) return false;
  return /^multipart\//i.test(String(request.headers['content-type'] ?? ''));
}

/**
 * The strict JSON body parser (a Fastify content-type parser over the raw bytes): UTF-8 decoded
 * strictly, parsed as Fastify does (secure-json-parse, the same prototype-poisoning refusals). A
 * scope accepting another JSON media type (SCIM's application/scim+json) registers it for that type.
 */
export function parseStrictJson(_request: FastifyRequest, raw: string | Buffer, done: (error: Error | null, body?: unknown) => void): void {
  const bytes = raw as Buffer;
  if (bytes.length === 0) return done(new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(), undefined);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return done(new Invalid(culpritOfBadUtf8(bytes), 'must be valid UTF-8'), undefined);
  }
  try {
    done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
  } catch {
    done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
  }
}

/** Installs the strict JSON parser and the text checks on a face. */
export function installInputChecks(app: FastifyInstance): void {
  // JSON bodies are decoded strictly from the raw bytes: Fastify's own parser decodes lossily, so
  // invalid UTF-8 became U+FFFD and was stored. Parsed as Fastify does (secure-json-parse, the
  // same prototype-poisoning refusals).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseStrictJson);

  // Where a request is, for telling body-reading failures from the handler's (isMalformedMultipart).
  // Hooks of the root run before any plugin's: the multipart plugin reads its body after this one.
  app.addHook('preValidation', (request, _reply, done) => {
    (request as unknown as Record<symbol, Phase>)[kPhase] = 'body';
    done();
  });
  // After every parser and plugin (the multipart fields are on the body only now), before handlers.
  app.addHook('preHandler', (request, _reply, done) => {
    (request as unknown as Record<symbol, Phase>)[kPhase] = 'handler';
    const bad = checkText(request);
    done(bad ? new Invalid(bad.path, bad.rule) : undefined);
  });
}

/**
 * Names the field holding invalid UTF-8: the bytes decoded lossily, the first string or key with a
 * U+FFFD. "body" when that is unclear (the bytes also hold a genuine U+FFFD, or are not JSON).
 */
function culpritOfBadUtf8(bytes: Buffer): string {
  if (hasGenuineReplacement(bytes)) return 'body';
  try {
    return clipPath(findText(JSON.parse(lossyUtf8.decode(bytes)), '', 0, (t) => t.includes(REPLACEMENT)) ?? 'body');
  } catch {
    return 'body';
  }
}

/** Whether the raw bytes hold a U+FFFD of their own: its UTF-8 bytes (EF BF BD) or its JSON escape. */
function hasGenuineReplacement(bytes: Buffer): boolean {
  if (/\\u[fF][fF][fF][dD]/.test(bytes.toString('latin1'))) return true;
  for (let i = bytes.indexOf(0xef); i >= 0; i = bytes.indexOf(0xef, i + 1)) {
    if (bytes[i + 1] === 0xbf && bytes[i + 2] === 0xbd) return true;
  }
  return false;
}

/** Caller-chosen keys are echoed: keep the path short. */
const clipPath = (path: string) => (path.length > 64 ? `${path.slice(0, 64)}…` : path);

/** The path of the first string or key (depth-first, bounded) that `bad` holds for. */
function findText(value: unknown, path: string, depth: number, bad: (text: string) => boolean): string | undefined {
  if (typeof value === 'string') return bad(value) ? path || 'body' : undefined;
  if (value === null || typeof value !== 'object' || depth >= MAX_BODY_DEPTH) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findText(value[i], `${path}[${i}]`, depth + 1, bad);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (bad(key)) return childPath;
    const found = findText(child, childPath, depth + 1, bad);
    if (found) return found;
  }
  return undefined;
}

const siteTextRule = (text: string): string | undefined => {
  if (text.includes(NUL)) return 'must not contain control characters';
  if (LONE_SURROGATE.test(text)) return 'must be valid Unicode text';
  return undefined;
};

/** Whether a parsed query, path parameters or body holds nothing to check. */
function holdsNoText(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value !== 'object') return false;
  for (const _key in value) return false;
  return true;
}

/** The first NUL or lone surrogate in the body, query or path parameters; in a form, also U+FFFD. */
function checkText(request: FastifyRequest): BadInput | undefined {
  // Most reads carry no parameters and no body: nothing to walk, nothing to allocate for them.
  if (holdsNoText(request.params) && holdsNoText(request.query) && holdsNoText(request.body)) return undefined;
  const inForm = FORM_TYPES.test(String(request.headers['content-type'] ?? ''));
  // A form is decoded lossily by its parser: a U+FFFD there is what invalid UTF-8 became.
  const rule = (text: string) => siteTextRule(text) ?? (inForm && text.includes(REPLACEMENT) ? 'must be valid UTF-8' : undefined);
  const sources: [unknown, string][] = [[request.params, 'path'], [request.query, 'query'], [formValues(request.body, inForm), '']];
  for (const [value, prefix] of sources) {
    let found: BadInput | undefined;
    const path = findText(value, prefix, 0, (text) => {
      const broken = rule(text);
      if (broken) found = { path: '', rule: broken };
      return broken !== undefined;
    });
    if (path !== undefined && found) return { path: clipPath(path), rule: found.rule };
  }
  return undefined;
}

/** Multipart fields arrive as part objects (which point back at the whole body): their values only. */
function formValues(body: unknown, inForm: boolean): unknown {
  if (!inForm || body === null || typeof body !== 'object') return body;
  const values: Record<string, unknown> = {};
  for (const [key, part] of Object.entries(body as Record<string, unknown>)) {
    const one = (p: unknown) => (p !== null && typeof p === 'object' && 'value' in p ? (p as { value: unknown }).value : p);
    values[key] = Array.isArray(part) ? part.map(one) : one(part);
  }
  return values;
}
