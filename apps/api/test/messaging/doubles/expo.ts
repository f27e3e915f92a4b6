// A double of Expo's push service, POST /--/api/v2/push/send, checking what Expo documents: a
// JSON body (gzip allowed) that is a message or an array of at most 100 messages, each with a
// `to` Expo push token and string title/body, an object `data`, `richContent.image` a string;
// with `accessToken` set it requires Authorization: Bearer <token> (enhanced push security).
// It answers {data: [ticket…]} in message order — {status: "ok", id} or {status: "error",
// message, details: {error}} for tokens told to fail — or {errors: [{code, message}]}.
import { randomUUID } from "node:crypto";
import { DoubleServer, mediaType, type RecordedRequest, type Reply } from "./server.ts";

export interface ExpoDoubleOptions {
  /** When set, every request must carry Authorization: Bearer <accessToken>. */
  accessToken?: string;
}

export interface ExpoMessage {
  to: string;
  title?: string;
  body?: string;
  data?: Record<string, unknown>;
  richContent?: { image?: string };
  [key: string]: unknown;
}

export interface ExpoBatch {
  messages: ExpoMessage[];
  /** Ticket ids given, in message order (undefined for error tickets). */
  ticketIds: Array<string | undefined>;
  authorization: string | undefined;
}

export const expoErrors = (status: number, code: string, message: string): Reply => ({
  status,
  body: { errors: [{ code, message }] },
});

const isExpoToken = (t: string) =>
  ((t.startsWith("ExponentPushToken[") || t.startsWith("ExpoPushToken[")) && t.endsWith("]")) ||
  /^[a-z\d]{8}-[a-z\d]{4}-[a-z\d]{4}-[a-z\d]{4}-[a-z\d]{12}$/i.test(t);

export class ExpoDouble extends DoubleServer {
  /** Accepted requests (200), in arrival order. */
  readonly batches: ExpoBatch[] = [];
  /** Tokens whose ticket is an error: token → details.error (e.g. DeviceNotRegistered). */
  readonly ticketErrors = new Map<string, string>();

  constructor(readonly options: ExpoDoubleOptions = {}) {
    super((req) => this.answer(req));
  }

  private answer(req: RecordedRequest): Reply {
    if (req.method !== "POST" || req.path !== "/--/api/v2/push/send") {
      return expoErrors(404, "NOT_FOUND", `${req.method} ${req.path} is not an endpoint of this double`);
    }
    if (this.options.accessToken !== undefined && req.headers.authorization !== `Bearer ${this.options.accessToken}`) {
      return expoErrors(401, "UNAUTHORIZED", "The bearer token is invalid; this project requires an access token.");
    }
    if (mediaType(req.headers["content-type"]) !== "application/json") {
      return expoErrors(400, "VALIDATION_ERROR", "Content-Type must be application/json");
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(req.body);
    } catch {
      return expoErrors(400, "VALIDATION_ERROR", "body is not JSON");
    }
    const messages = (Array.isArray(parsed) ? parsed : [parsed]) as ExpoMessage[];
    if (messages.length > 100) {
      return expoErrors(
        400,
        "PUSH_TOO_MANY_NOTIFICATIONS",
        `You are trying to send more than 100 push notifications in one request (${messages.length}).`,
      );
    }
    for (const [i, m] of messages.entries()) {
      const problem = checkMessage(m);
      if (problem) return expoErrors(400, "VALIDATION_ERROR", `"[${i}]${problem}`);
    }
    const ticketIds: Array<string | undefined> = [];
    const tickets = messages.map((m) => {
      const error = this.ticketErrors.get(m.to);
      if (error) {
        ticketIds.push(undefined);
        const message =
          error === "DeviceNotRegistered" ? `"${m.to}" is not a registered push notification recipient` : `${error} for "${m.to}"`;
        return { status: "error", message, details: { error, expoPushToken: m.to } };
      }
      const id = randomUUID();
      ticketIds.push(id);
      return { status: "ok", id };
    });
    this.batches.push({ messages, ticketIds, authorization: req.headers.authorization });
    return { status: 200, body: { data: tickets } };
  }
}

function checkMessage(m: unknown): string | undefined {
  if (typeof m !== "object" || m === null || Array.isArray(m)) return `" must be an object`;
  const x = m as Record<string, unknown>;
  if (typeof x.to !== "string" || !isExpoToken(x.to)) return `.to" must be an Expo push token, got ${JSON.stringify(x.to)}`;
  for (const k of ["title", "body", "subtitle"]) {
    if (x[k] !== undefined && typeof x[k] !== "string") return `.${k}" must be a string`;
  }
  if (x.data !== undefined && (typeof x.data !== "object" || x.data === null || Array.isArray(x.data))) return `.data" must be an object`;
  if (x.richContent !== undefined) {
    const rc = x.richContent as Record<string, unknown> | null;
    if (typeof rc !== "object" || rc === null || (rc.image !== undefined && typeof rc.image !== "string")) {
      return `.richContent" must be {image?: string}`;
    }
  }
  return undefined;
}
