// An Email template rendered for sending: the same fields the render preview shows (the body
// through the HTML-escaping engine), plus the plain-text part derived from the HTML. Runs in the
// render threads (templates/render-pool.ts).
import type { RenderedFields } from "@tidings/schema";
import { convert } from "html-to-text";

const TEXT_OPTIONS = {
  // RFC 5322 recommends lines of at most 78 characters.
  wordwrap: 78,
  selectors: [
    { selector: "a", options: { hideLinkHrefIfSameAsText: true } },
    // An image's src (often a tracking pixel or a data: URL) is noise in the text part.
    { selector: "img", format: "skip" },
  ],
};

/** An Email as sent: its fields rendered, and the plain-text part derived from the HTML. */
export interface EmailRendered {
  from: string;
  subject: string;
  /** HTML body, interpolated values already escaped. */
  html: string;
  /** Plain-text part derived from the HTML. */
  text: string;
  replyTo?: string;
  cc?: string;
  bcc?: string;
  headers?: Record<string, string>;
}

/** The plain-text alternative of an HTML body. */
export const htmlToText = (html: string): string => convert(html, TEXT_OPTIONS);

/** An Email definition's rendered fields as sent: optional fields that render empty are left out, and the text part added. */
export function emailFromFields(fields: RenderedFields): EmailRendered {
  const text = (key: string) => {
    const value = fields[key];
    return typeof value === "string" ? value : "";
  };
  const html = text("body");
  const rendered: EmailRendered = { from: text("from"), subject: text("subject"), html, text: htmlToText(html) };
  for (const key of ["replyTo", "cc", "bcc"] as const) {
    if (text(key).trim()) rendered[key] = text(key);
  }
  const headers = fields.headers;
  if (headers && typeof headers === "object" && Object.keys(headers).length) rendered.headers = headers;
  return rendered;
}
