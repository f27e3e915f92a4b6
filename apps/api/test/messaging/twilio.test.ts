// TwilioSender against a double that checks Twilio's documented Create-a-Message request.
import type { TwilioConfig } from "@tidings/schema";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TwilioSender } from "../../src/messaging/channels/twilio.ts";
import type { OutgoingMessage, SmsRendered } from "../../src/messaging/channels/types.ts";
import { deadUrl } from "./doubles/server.ts";
import { TwilioDouble, twilioError } from "./doubles/twilio.ts";
import { loopback } from "../support/outbound.ts";

const ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef";
const AUTH_TOKEN = "auth-token-0123456789";

let twilio: TwilioDouble;
beforeEach(async () => {
  twilio = await new TwilioDouble({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN }).start();
});
afterEach(async () => {
  await twilio.close();
});

const config = (over: Partial<TwilioConfig> = {}): TwilioConfig => ({
  accountSid: ACCOUNT_SID,
  authToken: AUTH_TOKEN,
  fromNumber: "+15005550006",
  baseUrl: twilio.url,
  ...over,
});
const sms = (to: string, body: string, i = 0): OutgoingMessage<SmsRendered> => ({
  deliveryId: `d-${i}`,
  workspaceId: "w",
  userId: `u-${i}`,
  to,
  rendered: { body },
});

describe("TwilioSender", () => {
  it("posts a form with To, Body and From, with Basic auth, and keeps the message sid", async () => {
    const outcomes = await new TwilioSender(loopback).send([sms("+14155550100", "Hello & welcome = 100% ✓")], config());

    expect(twilio.requests).toHaveLength(1);
    const req = twilio.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe(`/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`);
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString("base64")}`);
    expect(req.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      To: "+14155550100",
      Body: "Hello & welcome = 100% ✓",
      From: "+15005550006",
    });
    expect(twilio.messages).toHaveLength(1);
    expect(outcomes).toEqual([{ status: "sent", providerMessageId: twilio.messages[0]!.sid }]);
    expect(twilio.messages[0]!.sid).toMatch(/^SM[0-9a-f]{32}$/);
  });

  it("sends through the messaging service, without From, when one is configured", async () => {
    const outcomes = await new TwilioSender(loopback).send(
      [sms("+14155550100", "hi")],
      config({ messagingServiceSid: "MG0123456789abcdef0123456789abcdef" }),
    );
    expect(outcomes[0]!.status).toBe("sent");
    expect(twilio.messages[0]!.form).toEqual({ To: "+14155550100", Body: "hi", MessagingServiceSid: "MG0123456789abcdef0123456789abcdef" });
  });

  it("answers one outcome per message, in order, with bounded concurrency", async () => {
    twilio.delayMs = 40;
    const batch = Array.from({ length: 12 }, (_, i) => sms(`+1415555${String(100 + i).padStart(4, "0")}`, `m${i}`, i));
    const outcomes = await new TwilioSender({ ...loopback, concurrency: 3 }).send(batch, config());

    expect(twilio.maxInFlight).toBe(3);
    expect(outcomes).toHaveLength(12);
    const sidByTo = new Map(twilio.messages.map((m) => [m.to, m.sid]));
    for (const [i, o] of outcomes.entries()) expect(o).toEqual({ status: "sent", providerMessageId: sidByTo.get(batch[i]!.to) });
  });

  it("fails permanently on Twilio's 4xx errors, with its code and message", async () => {
    twilio.rejectTo.set("+14155550199", twilioError(400, 21610, "Attempt to send to unsubscribed recipient"));
    const outcomes = await new TwilioSender(loopback).send(
      [sms("+14155550100", "ok"), sms("not-a-number", "bad"), sms("+14155550199", "stopped")],
      config(),
    );
    expect(outcomes[0]!.status).toBe("sent");
    expect(outcomes[1]).toEqual({ status: "failed", reason: "Twilio error 21211: Invalid 'To' Phone Number: not-a-number (HTTP 400)" });
    expect(outcomes[2]).toEqual({ status: "failed", reason: "Twilio error 21610: Attempt to send to unsubscribed recipient (HTTP 400)" });
  });

  it("fails permanently when the credentials are refused", async () => {
    const outcomes = await new TwilioSender(loopback).send([sms("+14155550100", "hi")], config({ authToken: "wrong-token" }));
    expect(outcomes).toEqual([{ status: "failed", reason: "Twilio error 20003: Authenticate (HTTP 401)" }]);
    expect(twilio.messages).toHaveLength(0);
  });

  it("retries on 429 honouring Retry-After (seconds or HTTP-date), and on 5xx", async () => {
    twilio.failNext({ ...twilioError(429, 20429, "Too Many Requests"), headers: { "retry-after": "7" } });
    const [limited] = await new TwilioSender(loopback).send([sms("+14155550100", "hi")], config());
    expect(limited).toEqual({ status: "retry", reason: "Twilio error 20429: Too Many Requests (HTTP 429)", retryAfterMs: 7000 });

    const at = new Date(Date.now() + 60_000).toUTCString();
    twilio.failNext({ ...twilioError(503, 20503, "Service unavailable"), headers: { "retry-after": at } });
    const [unavailable] = await new TwilioSender(loopback).send([sms("+14155550100", "hi")], config());
    expect(unavailable!.status).toBe("retry");
    expect((unavailable as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(55_000);
    expect((unavailable as { retryAfterMs: number }).retryAfterMs).toBeLessThanOrEqual(60_000);

    twilio.failNext({ status: 500, body: "<html>oops</html>", headers: { "content-type": "text/html" } });
    const [crashed] = await new TwilioSender(loopback).send([sms("+14155550100", "hi")], config());
    expect(crashed).toEqual({ status: "retry", reason: "Twilio error: no error message in the answer (HTTP 500)" });
    expect(twilio.messages).toHaveLength(0);
  });

  it("retries when the connection fails or the answer is too slow", async () => {
    const [refused] = await new TwilioSender(loopback).send([sms("+14155550100", "hi")], config({ baseUrl: await deadUrl() }));
    expect(refused!.status).toBe("retry");
    expect((refused as { reason: string }).reason).toMatch(/ECONNREFUSED/);

    twilio.delayMs = 500;
    const [slow] = await new TwilioSender({ ...loopback, timeoutMs: 100 }).send([sms("+14155550100", "hi")], config());
    expect(slow).toEqual({ status: "retry", reason: "Twilio: no answer within 100 ms" });
  });

  it("the double refuses what Twilio refuses", async () => {
    const url = `${twilio.url}/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`;
    const auth = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString("base64")}`;
    const json = await fetch(url, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ To: "+14155550100", Body: "x", From: "+15005550006" }),
    });
    expect(json.status).toBe(400);
    const noSender = await fetch(url, {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/x-www-form-urlencoded" },
      body: "To=%2B14155550100&Body=x",
    });
    expect(((await noSender.json()) as { code: number }).code).toBe(21603);
    const otherAccount = await fetch(url.replace(ACCOUNT_SID, "ACother"), {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/x-www-form-urlencoded" },
      body: "To=%2B14155550100&Body=x&From=%2B15005550006",
    });
    expect(otherAccount.status).toBe(404);
    expect(twilio.messages).toHaveLength(0);
  });
});
