/**
 * The console's one template tool: a tagged template that escapes every interpolated value unless it
 * is already Html (built by this tag or by raw()). Typed, no build step, no engine to configure.
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export class Html {
  constructor(readonly text: string) {}
  toString(): string { return this.text; }
}

export type Fragment = Html | string | number | boolean | null | undefined | Fragment[];

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: Fragment): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Fragment[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Markup this module's caller vouches for (an SVG the QR library drew). */
export function raw(text: string): Html {
  return new Html(text);
}
