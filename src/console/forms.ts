/**
 * Form fields with their errors beside them: a form that comes back refused keeps what was typed,
 * marks each field that broke a rule (aria-invalid, the message tied by aria-describedby) and shows
 * every problem at once, in the page's words (its labels), with the domain rule's reason.
 */
import { Conflict, Invalid } from '../lib/errors.ts';
import type { BrokenRule } from '../lib/text-rules.ts';
import { html, type Html } from './html.ts';
import type { Notice } from './layout.ts';

/** Field name → the message shown beside it. */
export type FieldErrors = Record<string, string>;

// A pattern is the rule, but nobody reads a regular expression: the page says what it means first.
const PATTERN_HINTS: [RegExp, string][] = [
  [/^must match pattern "\^\[\^\\s@\]\+@/, 'is not an e-mail address: it'],
  [/^must match pattern "\^\[0-9\+/, 'may hold digits, spaces and + ( ) . / - only: it'],
  [/^must match pattern "\^\\S\(\.\*\\S\)\?\$"$/, 'must not start or end with a space: it'],
];

/** "First name must NOT have more than 100 characters": the field's label, then the rule's reason. */
export function sayProblem(label: string, reason: string): string {
  const hint = PATTERN_HINTS.find(([pattern]) => pattern.test(reason));
  return hint ? `${label} ${hint[1]} ${reason}` : `${label} ${reason}`;
}

/**
 * The messages of broken rules, keyed by the form field each belongs to: `labels` names the form's
 * fields (rule field → label); a rule field the form does not have goes to `otherField`.
 */
export function toFieldErrors(problems: BrokenRule[], labels: Record<string, string>, otherField: { name: string; label: string }): FieldErrors {
  const errors: FieldErrors = {};
  for (const { field, reason } of problems) {
    const known = Object.hasOwn(labels, field);
    const name = known ? field : otherField.name;
    const message = known ? sayProblem(labels[field]!, reason) : `${otherField.label}: ${field} ${reason}`;
    errors[name] = errors[name] ? `${errors[name]} ${message}` : message;
  }
  return errors;
}

/**
 * A service's refusal (Invalid, Conflict) as field errors; undefined for any other error. A Conflict
 * reads "A user with this e-mail already exists." (`entity` names what is taken).
 */
export function errorsOf(error: unknown, labels: Record<string, string>, otherField: { name: string; label: string }, entity = 'user'): FieldErrors | undefined {
  if (error instanceof Invalid) return toFieldErrors([{ field: error.field, reason: error.message.slice(error.field.length + 1) }], labels, otherField);
  if (error instanceof Conflict) {
    const field = error.fields.field && Object.hasOwn(labels, error.fields.field) ? error.fields.field : otherField.name;
    const label = labels[field] ?? otherField.label;
    return { [field]: `A ${entity} with this ${label.toLowerCase()} already exists.` };
  }
  return undefined;
}

export interface FieldOptions {
  name: string;
  label: string;
  type?: 'text' | 'email' | 'password' | 'search' | 'number' | 'url';
  value?: string;
  required?: boolean;
  maxLength?: number;
  autocomplete?: string;
  help?: string;
  error?: string;
  /** Extra attributes already escaped by html`` (min, max, inputmode…). */
  extra?: Html;
}

const req = (required?: boolean) => (required ? html`<span class="req" aria-hidden="true"> *</span>` : '');

/** A labelled input, its help and its error (announced, and tied to the input). */
export function inputField(o: FieldOptions): Html {
  const describedBy = [o.error ? `${o.name}-error` : '', o.help ? `${o.name}-help` : ''].filter(Boolean).join(' ');
  return html`<div class="field${o.error ? ' invalid' : ''}">
<label for="${o.name}">${o.label}${req(o.required)}</label>
${o.error ? html`<p class="field-error" id="${o.name}-error" role="alert">${o.error}</p>` : ''}
<input id="${o.name}" name="${o.name}" type="${o.type ?? 'text'}"${o.value !== undefined && o.type !== 'password' ? html` value="${o.value}"` : ''}${o.required ? html` required` : ''}${o.maxLength ? html` maxlength="${o.maxLength}"` : ''}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${o.error ? html` aria-invalid="true"` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}${o.extra ?? ''}>
${o.help ? html`<p id="${o.name}-help" class="muted">${o.help}</p>` : ''}
</div>`;
}

/** A labelled textarea, as inputField. */
export function textareaField(o: Omit<FieldOptions, 'type' | 'autocomplete'>): Html {
  const describedBy = [o.error ? `${o.name}-error` : '', o.help ? `${o.name}-help` : ''].filter(Boolean).join(' ');
  return html`<div class="field${o.error ? ' invalid' : ''}">
<label for="${o.name}">${o.label}${req(o.required)}</label>
${o.error ? html`<p class="field-error" id="${o.name}-error" role="alert">${o.error}</p>` : ''}
<textarea id="${o.name}" name="${o.name}"${o.error ? html` aria-invalid="true"` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}>${o.value ?? ''}</textarea>
${o.help ? html`<p id="${o.name}-help" class="muted">${o.help}</p>` : ''}
</div>`;
}

/** Said once above a form that has required fields. */
export const REQUIRED_NOTE = html`<p class="muted">Fields marked <span aria-hidden="true">*</span><span class="visually-hidden">with an asterisk</span> are required.</p>`;

/** Above a refused form: how many problems, found beside their fields (not an alert: each field's message is one). */
export function problemCount(errors: FieldErrors): Html {
  const n = Object.keys(errors).length;
  return n === 0 ? html`` : html`<p class="error">${n === 1 ? 'There is a problem' : `There are ${n} problems`} with this form: see the ${n === 1 ? 'field' : 'fields'} marked below. Nothing was saved.</p>`;
}

/** "1 user", "2 users". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`;
}

// Helpers of pages that write their fields by hand (groups, applications, OAuth clients).

/** The alert above the form. */
export function errorNotices(errors: FieldErrors): Notice[] {
  const messages = Object.values(errors);
  if (messages.length === 0) return [];
  return [{ kind: 'error', text: messages.length === 1 ? messages[0]! : `${messages.length} problems: each is shown beside its field below.` }];
}

/** The attributes of a field that may carry an error (and a help text). */
export function fieldState(errors: FieldErrors, id: string, helpId?: string): Html {
  const ids = [errors[id] ? `${id}-error` : '', helpId ?? ''].filter(Boolean).join(' ');
  return html`${ids ? html` aria-describedby="${ids}"` : ''}${errors[id] ? html` aria-invalid="true"` : ''}`;
}

/** The message under a field, when it has one. */
export function fieldError(errors: FieldErrors, id: string): Html {
  return errors[id] ? html`<p class="field-error" id="${id}-error">${errors[id]}</p>` : html``;
}

/** The mark of a required field; hidden from the accessible name (the field is `required`). */
export const REQUIRED = html`<span class="required" aria-hidden="true">*</span>`;

/** A rule's reason as the console words it: an empty required field "is required" (the API says "must NOT have fewer than 1 characters"). */
export const inWords = (reason: string): string => reason.replace(/^must NOT have fewer than 1 characters$/, 'is required');

/**
 * A textarea of "nameN=value" lines (attributes) as a map; blank lines skipped, the rules check the names.
 * @throws Invalid(field) for a line without a name before "=".
 */
export function parseAttributeLines(text: string, field: string, example: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq < 1) throw new Invalid(field, `line "${line.trim()}" must read ${example}`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}
