// One delivery's email as nodemailer sends it: headers checked for injection, the sender's own
// headers reserved, RFC 8058 one-click unsubscribe.
import type { SmtpConfig } from "@tidings/schema";
import type { SendMailOptions } from "nodemailer";
import type { EmailRendered, OutgoingMessage } from "./types.ts";

export type SmtpSenderConfig = SmtpConfig & { password?: string };

/** What no retry can fix in a message: it fails. */
export class Refused extends Error {}

/** Headers the sender sets itself: a template's `headers` may not set them. */
const RESERVED_HEADERS = new Set([
  "from",
  "to",
  "cc",
  "bcc",
  "subject",
  "reply-to",
  "sender",
  "return-path",
  "message-id",
  "date",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "list-unsubscribe",
  "list-unsubscribe-post",
]);
/** RFC 5322 field name: printable ASCII but the colon. */
const HEADER_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
/** CR, LF and every other control character but tab: in a header value they are an injection. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
/** A single bare address: the delivery's contact point, never a list or a display name. */
const ADDRESS = /^[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+$/;
const DELIVERY_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
/** A header value, trimmed; CR/LF or other control characters inside refuse the message. */
function headerValue(name: string, value: string): string {
  const trimmed = value.trim();
  if (CONTROL.test(trimmed)) throw new Refused(`header injection refused: ${name} contains a line break or control character`);
  return trimmed;
}

/** The nodemailer message of one delivery; throws `Refused` for what no retry can fix. */
export function buildMail(message: OutgoingMessage<EmailRendered>, config: SmtpSenderConfig, messageIdDomain = "tidings"): SendMailOptions {
  const { rendered } = message;
  if (!DELIVERY_ID.test(message.deliveryId)) throw new Refused(`delivery id ${JSON.stringify(message.deliveryId)} cannot be a Message-ID`);
  const to = headerValue("To", message.to);
  if (!ADDRESS.test(to)) throw new Refused(`invalid recipient address ${JSON.stringify(message.to)}`);
  const from = headerValue("From", rendered.from) || headerValue("From", config.from ?? "");
  if (!from) throw new Refused("no sender: the template's from renders empty and the provider has no default from");

  const mail: SendMailOptions = {
    from,
    to,
    subject: headerValue("Subject", rendered.subject),
    html: rendered.html,
    text: rendered.text,
    messageId: `<${message.deliveryId}@${messageIdDomain}>`,
    // No attachment or content is ever read from the server's disk or fetched from a URL.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  const optional = { replyTo: "Reply-To", cc: "Cc", bcc: "Bcc" } as const;
  for (const [key, name] of Object.entries(optional) as [keyof typeof optional, string][]) {
    const value = headerValue(name, rendered[key] ?? "");
    if (value) mail[key] = value;
  }

  const headers: Record<string, string> = {};
  for (const [name, raw] of Object.entries(rendered.headers ?? {})) {
    if (!HEADER_NAME.test(name)) throw new Refused(`header injection refused: invalid header name ${JSON.stringify(name)}`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw new Refused(`header ${name} is set by the sender, not by a template`);
    const value = headerValue(name, raw);
    if (value) headers[name] = value;
  }
  if (message.unsubscribeUrl !== undefined) {
    const url = headerValue("List-Unsubscribe", message.unsubscribeUrl);
    if (!/^https?:\/\/[^\s<>]+$/.test(url)) throw new Refused(`invalid unsubscribe URL ${JSON.stringify(url)}`);
    // RFC 8058 one-click unsubscribe: the URL in angle brackets plus the POST marker.
    headers["List-Unsubscribe"] = `<${url}>`;
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
  }
  if (Object.keys(headers).length) mail.headers = headers;
  return mail;
}
