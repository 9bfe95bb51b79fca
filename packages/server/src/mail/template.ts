import { invalid } from '../core/errors.js';

/** DESIGN.md 22's placeholders, exactly `{{name}}`. */
export const PLACEHOLDERS = ['licensee', 'product', 'expiry', 'portalLink', 'organisation', 'lid'] as const;
export type Placeholder = (typeof PLACEHOLDERS)[number];
export type Values = Record<Placeholder, string>;

export const DEFAULT_SUBJECT = 'Your licence for {{product}}';
export const DEFAULT_TEXT = [
  'Hello {{licensee}},',
  '',
  'your licence for {{product}} is attached to this email ({{lid}}). It expires: {{expiry}}.',
  '',
  'Save the attached file where your application asks for its licence.',
  'You can also see your licences and machines in the portal (the link works once, for 24 hours):',
  '{{portalLink}}',
  '',
  '{{organisation}}',
  '',
].join('\n');
export const DEFAULT_HTML = [
  '<!doctype html>',
  '<html><body>',
  '<p>Hello {{licensee}},</p>',
  '<p>your licence for <strong>{{product}}</strong> is attached to this email ({{lid}}). It expires: {{expiry}}.</p>',
  '<p>Save the attached file where your application asks for its licence.</p>',
  '<p>You can also see your licences and machines in <a href="{{portalLink}}">the portal</a> (the link works once, for 24 hours).</p>',
  '<p>{{organisation}}</p>',
  '</body></html>',
  '',
].join('\n');

const ANY = /\{\{([^{}]*)\}\}/g;

/** 400 naming the first `{{…}}` that is not one of the placeholders. */
export function checkPlaceholders(field: string, template: string): void {
  for (const match of template.matchAll(ANY)) {
    if (!(PLACEHOLDERS as readonly string[]).includes(match[1]!)) {
      throw invalid(`mail.${field}`, `unknown placeholder {{${match[1]}}}; the placeholders are ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}`);
    }
  }
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function fill(template: string, values: Values, encode: (text: string) => string): string {
  return template.replace(ANY, (whole, name: string) => ((PLACEHOLDERS as readonly string[]).includes(name) ? encode(values[name as Placeholder]) : whole));
}

/** The subject, text and HTML of one email: values HTML-escaped in the HTML, CR and LF dropped from the subject. */
export function render(template: { subject: string; text: string; html: string }, values: Values) {
  return {
    subject: fill(template.subject, values, (v) => v).replace(/[\r\n]/g, ''),
    text: fill(template.text, values, (v) => v),
    html: fill(template.html, values, escapeHtml),
  };
}
