// A Twilio Programmable Messaging double. It checks what Twilio documents for "Create a Message":
// POST /2010-04-01/Accounts/{AccountSid}/Messages.json, HTTP Basic auth AccountSid:AuthToken,
// an application/x-www-form-urlencoded body with To, Body (or MediaUrl), and From or
// MessagingServiceSid; it answers 201 with a Message resource or Twilio's error body
// {code, message, more_info, status}.
import { randomBytes } from "node:crypto";
import { DoubleServer, mediaType, type RecordedRequest, type Reply } from "./server.ts";

export interface TwilioDoubleOptions {
  accountSid: string;
  authToken: string;
}

export interface ReceivedSms {
  to: string;
  body: string;
  from?: string;
  messagingServiceSid?: string;
  sid: string;
  /** All form fields, as received. */
  form: Record<string, string>;
}

export function twilioError(status: number, code: number, message: string): Reply {
  return { status, body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status } };
}

export class TwilioDouble extends DoubleServer {
  /** Messages accepted (201), in arrival order. */
  readonly messages: ReceivedSms[] = [];
  /** `To` numbers that answer this Twilio error instead of being accepted. */
  readonly rejectTo = new Map<string, Reply>();

  constructor(readonly options: TwilioDoubleOptions) {
    super((req) => this.answer(req));
  }

  private answer(req: RecordedRequest): Reply {
    const { accountSid, authToken } = this.options;
    if (req.method !== "POST") return twilioError(405, 20004, "Method not allowed");
    const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(req.path);
    if (!m) return twilioError(404, 20404, `The requested resource ${req.path} was not found`);
    const auth = req.headers.authorization ?? "";
    const basic = /^Basic ([A-Za-z0-9+/=]+)$/.exec(auth);
    const decoded = basic ? Buffer.from(basic[1]!, "base64").toString("utf8") : "";
    if (decoded !== `${accountSid}:${authToken}`) return twilioError(401, 20003, "Authenticate");
    if (decodeURIComponent(m[1]!) !== accountSid) return twilioError(404, 20404, `The requested resource ${req.path} was not found`);
    if (mediaType(req.headers["content-type"]) !== "application/x-www-form-urlencoded") {
      return twilioError(400, 20001, "Content-Type must be application/x-www-form-urlencoded");
    }
    const form = Object.fromEntries(new URLSearchParams(req.body));
    if (!form.To) return twilioError(400, 21604, "A 'To' phone number is required.");
    if (!/^\+[1-9]\d{1,14}$/.test(form.To)) return twilioError(400, 21211, `Invalid 'To' Phone Number: ${form.To}`);
    if (!form.Body && !form.MediaUrl) return twilioError(400, 21602, "Message body is required.");
    if (!form.From && !form.MessagingServiceSid) {
      return twilioError(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.");
    }
    const rejected = this.rejectTo.get(form.To);
    if (rejected) return rejected;

    const sid = `SM${randomBytes(16).toString("hex")}`;
    this.messages.push({
      to: form.To,
      body: form.Body ?? "",
      ...(form.From ? { from: form.From } : {}),
      ...(form.MessagingServiceSid ? { messagingServiceSid: form.MessagingServiceSid } : {}),
      sid,
      form,
    });
    return {
      status: 201,
      body: {
        sid,
        account_sid: accountSid,
        to: form.To,
        from: form.From ?? null,
        messaging_service_sid: form.MessagingServiceSid ?? null,
        body: form.Body ?? "",
        status: form.MessagingServiceSid ? "accepted" : "queued",
        num_segments: "1",
        direction: "outbound-api",
        api_version: "2010-04-01",
        uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
      },
    };
  }
}
