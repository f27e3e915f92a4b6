// ExpoSender against a double of Expo's push/send endpoint (≤ 100 messages per request, tickets
// in message order, per-token ticket errors).
import type { ExpoConfig } from "@tidings/schema";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ExpoSender } from "../../src/messaging/channels/expo.ts";
import { NOT_SENT } from "../../src/messaging/channels/send-each.ts";
import type { OutgoingMessage, PushRendered } from "../../src/messaging/channels/types.ts";
import { ExpoDouble, expoErrors } from "./doubles/expo.ts";
import { deadUrl } from "./doubles/server.ts";
import { loopback } from "../support/outbound.ts";

let expo: ExpoDouble;
beforeEach(async () => {
  expo = await new ExpoDouble().start();
});
afterEach(async () => {
  await expo.close();
});

const config = (over: Partial<ExpoConfig> = {}): ExpoConfig => ({ baseUrl: expo.url, ...over });
const token = (i: number) => `ExponentPushToken[device-${String(i).padStart(4, "0")}]`;
const push = (to: string, rendered: Partial<PushRendered> = {}, i = 0): OutgoingMessage<PushRendered> => ({
  deliveryId: `d-${i}`,
  workspaceId: "w",
  userId: `u-${i}`,
  to,
  rendered: { title: "Title", body: "Body", ...rendered },
});
const many = (n: number) => Array.from({ length: n }, (_, i) => push(token(i), { body: `#${i}` }, i));
/** Ticket id Expo gave each token, from what the double recorded. */
const ticketIdByToken = () => new Map(expo.batches.flatMap((b) => b.messages.map((m, k) => [m.to, b.ticketIds[k]] as const)));

describe("ExpoSender", () => {
  it("posts the documented message fields as a JSON array", async () => {
    const outcomes = await new ExpoSender(loopback).send(
      [
        push(token(1), { title: "Hi", body: "There", imageUrl: "https://img.example/x.png", data: { orderId: "42" } }),
        push("ExpoPushToken[abc]"),
      ],
      config(),
    );
    expect(expo.requests).toHaveLength(1);
    const req = expo.requests[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/--/api/v2/push/send");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers.authorization).toBeUndefined();
    expect(JSON.parse(req.body)).toEqual([
      { to: token(1), title: "Hi", body: "There", data: { orderId: "42" }, richContent: { image: "https://img.example/x.png" } },
      { to: "ExpoPushToken[abc]", title: "Title", body: "Body" },
    ]);
    const ids = expo.batches[0]!.ticketIds;
    expect(outcomes).toEqual([
      { status: "sent", providerMessageId: ids[0] },
      { status: "sent", providerMessageId: ids[1] },
    ]);
  });

  it("sends the access token as a bearer token when configured", async () => {
    await expo.close();
    expo = await new ExpoDouble({ accessToken: "expo-access-token-123" }).start();
    const ok = await new ExpoSender(loopback).send([push(token(1))], config({ accessToken: "expo-access-token-123" }));
    expect(ok[0]!.status).toBe("sent");
    expect(expo.requests[0]!.headers.authorization).toBe("Bearer expo-access-token-123");

    const refused = await new ExpoSender(loopback).send([push(token(2)), push(token(3))], config({ accessToken: "wrong" }));
    const reason = "Expo UNAUTHORIZED: The bearer token is invalid; this project requires an access token. (HTTP 401)";
    expect(refused).toEqual([
      { status: "failed", reason },
      { status: "failed", reason },
    ]);
  });

  it("splits 250 messages into requests of 100, 100 and 50 and maps tickets in order", async () => {
    const batch = many(250);
    const outcomes = await new ExpoSender(loopback).send(batch, config());

    expect(expo.requests).toHaveLength(3);
    expect(expo.batches.map((b) => b.messages.length).sort((a, b) => b - a)).toEqual([100, 100, 50]);
    expect(expo.batches.flatMap((b) => b.messages.map((m) => m.to)).sort()).toEqual(batch.map((m) => m.to).sort());
    const ids = ticketIdByToken();
    expect(outcomes).toHaveLength(250);
    for (const [i, o] of outcomes.entries()) expect(o).toEqual({ status: "sent", providerMessageId: ids.get(batch[i]!.to) });
    expect(new Set(outcomes.map((o) => (o as { providerMessageId: string }).providerMessageId)).size).toBe(250);
  });

  it("leaves out of its request the messages the pipeline says may no longer go", async () => {
    const batch = many(5);
    const outcomes = await new ExpoSender(loopback).send(batch, config(), (m) => m.deliveryId !== "d-1" && m.deliveryId !== "d-3");
    expect(expo.batches.flatMap((b) => b.messages.map((m) => m.to))).toEqual([token(0), token(2), token(4)]);
    expect(outcomes.map((o) => o.status)).toEqual(["sent", "retry", "sent", "retry", "sent"]);
    expect(outcomes[1]).toEqual(NOT_SENT);
    // None may go: no request at all.
    expect(await new ExpoSender(loopback).send(many(2), config(), () => false)).toEqual([NOT_SENT, NOT_SENT]);
    expect(expo.requests).toHaveLength(1);
  });

  it("fails a DeviceNotRegistered ticket with its reason and sends the others", async () => {
    expo.ticketErrors.set(token(3), "DeviceNotRegistered");
    expo.ticketErrors.set(token(150), "MessageTooBig");
    expo.ticketErrors.set(token(160), "MessageRateExceeded");
    const outcomes = await new ExpoSender(loopback).send(many(200), config());

    expect(outcomes[3]).toEqual({
      status: "failed",
      reason: `DeviceNotRegistered: "${token(3)}" is not a registered push notification recipient`,
    });
    expect(outcomes[150]).toEqual({ status: "failed", reason: `MessageTooBig: MessageTooBig for "${token(150)}"` });
    expect(outcomes[160]).toEqual({ status: "retry", reason: `MessageRateExceeded: MessageRateExceeded for "${token(160)}"` });
    const ids = ticketIdByToken();
    outcomes.forEach((o, i) => {
      if (i !== 3 && i !== 150 && i !== 160) expect(o).toEqual({ status: "sent", providerMessageId: ids.get(token(i)) });
    });
  });

  it("retries every message of a request answered 429 (with Retry-After) or 5xx, not the others", async () => {
    expo.failNext({ ...expoErrors(429, "TOO_MANY_REQUESTS", "Rate limit exceeded"), headers: { "retry-after": "12" } });
    expo.failNext(expoErrors(502, "INTERNAL_SERVER_ERROR", "An unknown error occurred."));
    const outcomes = await new ExpoSender({ ...loopback, concurrency: 1 }).send(many(250), config());

    expect(expo.requests.map((r) => (JSON.parse(r.body) as unknown[]).length)).toEqual([100, 100, 50]);
    for (const o of outcomes.slice(0, 100)) {
      expect(o).toEqual({ status: "retry", reason: "Expo TOO_MANY_REQUESTS: Rate limit exceeded (HTTP 429)", retryAfterMs: 12_000 });
    }
    for (const o of outcomes.slice(100, 200)) {
      expect(o).toEqual({ status: "retry", reason: "Expo INTERNAL_SERVER_ERROR: An unknown error occurred. (HTTP 502)" });
    }
    expect(outcomes.slice(200).every((o) => o.status === "sent")).toBe(true);
    expect(expo.batches).toHaveLength(1);
  });

  it("fails every message of a request Expo refuses with a 4xx", async () => {
    expo.failNext(
      expoErrors(400, "PUSH_TOO_MANY_EXPERIENCE_IDS", "All push notification messages in the same request must be for the same project."),
    );
    const outcomes = await new ExpoSender(loopback).send(many(3), config());
    const reason =
      "Expo PUSH_TOO_MANY_EXPERIENCE_IDS: All push notification messages in the same request must be for the same project. (HTTP 400)";
    expect(outcomes).toEqual([
      { status: "failed", reason },
      { status: "failed", reason },
      { status: "failed", reason },
    ]);
  });

  it("fails malformed tokens without sending them, so they cannot sink their request", async () => {
    const outcomes = await new ExpoSender(loopback).send([push(token(1)), push("not-a-token"), push(token(2))], config());
    expect(outcomes[1]).toEqual({ status: "failed", reason: 'InvalidExpoPushToken: "not-a-token" is not an Expo push token' });
    expect(outcomes[0]!.status).toBe("sent");
    expect(outcomes[2]!.status).toBe("sent");
    expect(JSON.parse(expo.requests[0]!.body).map((m: { to: string }) => m.to)).toEqual([token(1), token(2)]);
  });

  it("retries when the connection fails, the answer is slow, or tickets do not match the messages", async () => {
    const [refused] = await new ExpoSender(loopback).send([push(token(1))], config({ baseUrl: await deadUrl() }));
    expect(refused!.status).toBe("retry");
    expect((refused as { reason: string }).reason).toMatch(/ECONNREFUSED/);

    expo.failNext({ status: 200, body: { data: [{ status: "ok", id: "only-one" }] } });
    const short = await new ExpoSender(loopback).send([push(token(1)), push(token(2))], config());
    expect(short).toEqual([
      { status: "retry", reason: "Expo answered 1 tickets for 2 messages" },
      { status: "retry", reason: "Expo answered 1 tickets for 2 messages" },
    ]);

    expo.delayMs = 500;
    const [slow] = await new ExpoSender({ ...loopback, timeoutMs: 100 }).send([push(token(1))], config());
    expect(slow).toEqual({ status: "retry", reason: "Expo: no answer within 100 ms" });
  });

  it("the double refuses more than 100 messages and malformed tokens", async () => {
    const post = (body: unknown) =>
      fetch(`${expo.url}/--/api/v2/push/send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const tooMany = await post(Array.from({ length: 101 }, (_, i) => ({ to: token(i), body: "x" })));
    expect(tooMany.status).toBe(400);
    const badToken = await post([{ to: "nope", body: "x" }]);
    expect(badToken.status).toBe(400);
    expect(expo.batches).toHaveLength(0);
  });
});
