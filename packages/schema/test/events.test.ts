import { describe, expect, it } from "vitest";
import { BatchRequestBody, errorStatus, IdentifyRequestBody, TrackRequestBody } from "../src/index.js";
import { buildOpenApiDocument } from "../src/openapi/index.js";

describe("event schemas", () => {
  it("accept Segment's fields and keep unknown ones", () => {
    const ev = TrackRequestBody.parse({ userId: 42, event: "Clicked", properties: { a: 1 }, _metadata: { x: 1 } });
    expect(ev).toMatchObject({ userId: "42", event: "Clicked", _metadata: { x: 1 } });
  });

  it("need userId or anonymousId", () => {
    const r = IdentifyRequestBody.safeParse({ traits: {} });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["userId"]);
    expect(IdentifyRequestBody.safeParse({ anonymousId: "a", userId: null }).success).toBe(true);
  });

  it("name each bad batch item by index", () => {
    const r = BatchRequestBody.safeParse({
      batch: [
        { type: "track", userId: "u", event: "ok" },
        { type: "track", userId: "u" },
        { type: "nope", userId: "u" },
      ],
    });
    expect(r.error?.issues.map((i) => i.path.join("."))).toEqual(["batch.1.event", "batch.2.type"]);
  });

  it("refuse timestamps that are not ISO 8601", () => {
    for (const timestamp of ["yesterday", "2024-13-45T00:00:00Z", "1700000000"]) {
      expect(TrackRequestBody.safeParse({ userId: "u", event: "e", timestamp }).success).toBe(false);
    }
    expect(TrackRequestBody.safeParse({ userId: "u", event: "e", timestamp: "2024-05-01T10:00:00.123+02:00" }).success).toBe(true);
  });
});

describe("OpenAPI document", () => {
  it("is 3.1 and documents every error code", () => {
    const doc = buildOpenApiDocument() as { openapi: string; info: { description: string } };
    expect(doc.openapi).toBe("3.1.0");
    for (const code of Object.keys(errorStatus)) expect(doc.info.description).toContain(code);
  });

  it("take traits, properties and context as objects, as sent (not copied), and refuse anything else", () => {
    const traits = { plan: "pro", nested: { a: [1, 2] } };
    const ev = IdentifyRequestBody.parse({ userId: "u", traits });
    expect(ev.traits).toBe(traits);
    for (const bad of [[1, 2], "pro", 3, null]) {
      const r = TrackRequestBody.safeParse({ userId: "u", event: "e", properties: bad });
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]).toMatchObject({ path: ["properties"], message: "expected an object" });
    }
  });
});
