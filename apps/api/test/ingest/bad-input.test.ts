// Hostile and malformed input: each gets the right status and the error envelope, never a 5xx,
// nothing of a refused request is stored, and the server keeps answering afterwards.
import { gzipSync, deflateSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, request } from "../support/http.ts";
import { expect204, expectAlive, expectError, ingest, issuePaths, listEvents, mid } from "./helpers.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterEach(async () => {
  await expectAlive(t);
});
afterAll(async () => {
  await t.close();
});

/** Sends raw bytes with the write key. */
function raw(path: string, body: string | Uint8Array, headers: Record<string, string> = { "content-type": "application/json" }) {
  return request(t.url, "POST", path, { headers: { ...basic(t.workspace.writeKey), ...headers }, raw: body });
}

const track = (extra: Record<string, unknown> = {}) => ({ type: "track", userId: "u-bad", event: "E", messageId: mid(), ...extra });

describe("body encoding", () => {
  it("malformed JSON → 400", async () => {
    for (const body of ['{"userId": "u", "event":', "{userId: 'u'}", "[1,2", "\u0000"]) {
      expectError(await raw("/api/public/apps/track", body), 400, "VALIDATION_FAILED");
    }
  });

  it("bytes that are not UTF-8 → 400, plain or gzipped, and nothing is stored", async () => {
    const event = track({ userId: "u-latin1" });
    const json = Buffer.from(JSON.stringify(event).replace("u-latin1", "u-latin1\u00ff"), "latin1");
    const batch = Buffer.concat([
      Buffer.from('{"batch":[{"type":"track","userId":"u-latin1","event":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}]}'),
    ]);
    for (const [path, body, headers] of [
      ["/v1/track", json, {}],
      ["/v1/track", gzipSync(json), { "content-encoding": "gzip" }],
      ["/v1/batch", batch, {}],
    ] as const) {
      const res = await raw(path, body, { "content-type": "application/json", ...headers });
      expectError(res, 400, "VALIDATION_FAILED");
      expect(res.body.error.message).toMatch(/UTF-8/);
    }
    expect(await listEvents(t, { userId: "u-latin1" })).toEqual([]);
    expect(await listEvents(t, { userId: "u-latin1\ufffd" })).toEqual([]);
  });

  it("an empty body or a non-object body → 400", async () => {
    expectError(await raw("/v1/track", ""), 400, "VALIDATION_FAILED");
    for (const body of ["[]", "null", '"track"', "42"]) {
      expectError(await raw("/v1/track", body), 400, "VALIDATION_FAILED");
      expectError(await raw("/v1/batch", body), 400, "VALIDATION_FAILED");
    }
  });

  it("a content type that is not JSON → 415", async () => {
    const body = JSON.stringify(track());
    for (const type of ["text/html", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"]) {
      expectError(await raw("/api/public/apps/track", body, { "content-type": type }), 415, "UNSUPPORTED_MEDIA_TYPE");
    }
  });

  it("JSON-ish content types are read: application/json; charset, +json, text/plain", async () => {
    for (const type of ["application/json; charset=utf-8", "application/vnd.segment+json", "text/plain"]) {
      expect204(await raw("/api/public/apps/track", JSON.stringify(track()), { "content-type": type }));
    }
  });

  it("gzip and deflate bodies are read whatever their content type", async () => {
    const a = track();
    const b = track();
    expect204(
      await raw("/v1/batch", gzipSync(JSON.stringify({ batch: [a] })), {
        "content-type": "application/x-www-form-urlencoded",
        "content-encoding": "gzip",
      }),
    );
    expect204(
      await raw("/v1/batch", deflateSync(JSON.stringify({ batch: [b] })), {
        "content-type": "application/json",
        "content-encoding": "deflate",
      }),
    );
    const stored = (await listEvents(t, { userId: "u-bad" })).map((e) => e.messageId);
    expect(stored).toEqual(expect.arrayContaining([a.messageId, b.messageId]));
  });

  it("invalid gzip data → 400; an unknown encoding → 415", async () => {
    expectError(await raw("/v1/batch", Buffer.from("definitely not gzip"), { "content-encoding": "gzip" }), 400, "VALIDATION_FAILED");
    const truncated = gzipSync(JSON.stringify({ batch: [track()] })).subarray(0, 20);
    expectError(await raw("/v1/batch", truncated, { "content-encoding": "gzip" }), 400, "VALIDATION_FAILED");
    expectError(await raw("/v1/batch", gzipSync("not json"), { "content-encoding": "gzip" }), 400, "VALIDATION_FAILED");
    expectError(await raw("/v1/batch", JSON.stringify({ batch: [track()] }), { "content-encoding": "br" }), 415, "UNSUPPORTED_MEDIA_TYPE");
  });
});

describe("size limits", () => {
  it("a request over 500 KB → 413", async () => {
    const big = { batch: Array.from({ length: 30 }, () => track({ properties: { pad: "x".repeat(20_000) } })) };
    expect(JSON.stringify(big).length).toBeGreaterThan(500 * 1024);
    expectError(await ingest(t, "/v1/batch", big), 413, "PAYLOAD_TOO_LARGE");
  });

  it("a gzip body that inflates past 500 KB → 413 (small on the wire)", async () => {
    const bomb = gzipSync(JSON.stringify({ batch: [track({ properties: { pad: " ".repeat(5_000_000) } })] }));
    expect(bomb.length).toBeLessThan(50_000);
    expectError(await raw("/v1/batch", bomb, { "content-encoding": "gzip" }), 413, "PAYLOAD_TOO_LARGE");
  });

  it("an event over 32 KB → 413 naming the item; nothing of the batch is stored", async () => {
    const ok = track();
    const res = await ingest(t, "/v1/batch", { batch: [ok, track({ properties: { pad: "x".repeat(33 * 1024) } })] });
    expectError(res, 413, "PAYLOAD_TOO_LARGE");
    expect(issuePaths(res)).toEqual(["batch.1"]);
    expect((await listEvents(t)).some((e) => e.messageId === ok.messageId)).toBe(false);
    expectError(await ingest(t, "track", track({ properties: { pad: "x".repeat(33 * 1024) } })), 413, "PAYLOAD_TOO_LARGE");
  });

  it("a batch of more than 2 500 events → 413; 2 500 are accepted", async () => {
    const tooMany = Array.from({ length: 2501 }, (_, i) => ({ type: "track", userId: "u-many", event: "E", messageId: `many-${i}` }));
    expectError(await ingest(t, "batch", { batch: tooMany }), 413, "PAYLOAD_TOO_LARGE");
    expect(await listEvents(t, { userId: "u-many" })).toHaveLength(0);
    expect204(await ingest(t, "batch", { batch: tooMany.slice(0, 2500) }));
    expect(await listEvents(t, { userId: "u-many" })).toHaveLength(2500);
  });
});

describe("schema violations", () => {
  it("neither userId nor anonymousId → 400 on every endpoint", async () => {
    for (const kind of ["identify", "track", "page", "screen", "group"]) {
      const res = await ingest(t, kind, { event: "E", groupId: "g", messageId: mid() });
      expectError(res, 400, "VALIDATION_FAILED");
      expect(issuePaths(res)).toContain("userId");
    }
    const res = await ingest(t, "batch", { batch: [{ type: "track", event: "E" }] });
    expect(issuePaths(res)).toContain("batch.0.userId");
  });

  it("track without `event`, group without groupId, alias without previousId → 400 naming the field", async () => {
    for (const [kind, body, path] of [
      ["track", { userId: "u" }, "event"],
      ["track", { userId: "u", event: "" }, "event"],
      ["group", { userId: "u" }, "groupId"],
      ["alias", { userId: "u" }, "previousId"],
    ] as const) {
      const res = await ingest(t, kind, body);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(issuePaths(res)).toContain(path);
    }
  });

  it("a `type` that contradicts the endpoint → 400", async () => {
    const res = await ingest(t, "track", { type: "identify", userId: "u", event: "E" });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(issuePaths(res)).toEqual(["type"]);
    expectError(await ingest(t, "/v1/identify", { type: "bogus", userId: "u" }), 400, "VALIDATION_FAILED");
    const bad = await ingest(t, "batch", { batch: [{ type: "bogus", userId: "u" }] });
    expectError(bad, 400, "VALIDATION_FAILED");
    expect(issuePaths(bad)[0]).toMatch(/^batch\.0/);
  });

  it("invalid timestamps → 400", async () => {
    for (const ts of ["yesterday", "2024-13-45T00:00:00Z", "12/01/2024", 1700000000000, "0000-01-01T00:00:00Z", ""]) {
      const res = await ingest(t, "track", track({ timestamp: ts }));
      expectError(res, 400, "VALIDATION_FAILED");
      expect(issuePaths(res)).toEqual(["timestamp"]);
    }
    const res = await ingest(t, "batch", { batch: [track(), track({ originalTimestamp: "soon" })], sentAt: "2024-01-01T00:00:00Z" });
    expect(issuePaths(res)).toEqual(["batch.1.originalTimestamp"]);
    expectError(await ingest(t, "batch", { batch: [track()], sentAt: "not a date" }), 400, "VALIDATION_FAILED");
  });

  it("a messageId over 100 characters → 400", async () => {
    const res = await ingest(t, "track", track({ messageId: "m".repeat(101) }));
    expectError(res, 400, "VALIDATION_FAILED");
    expect(issuePaths(res)).toEqual(["messageId"]);
  });

  it("a batch with bad items stores nothing and names each bad item", async () => {
    const good = [track(), track(), track()];
    const res = await ingest(t, "/v1/batch", {
      batch: [
        good[0],
        { type: "track", userId: "u-bad" },
        good[1],
        { type: "identify", traits: {} },
        good[2],
        { type: "group", userId: "u" },
      ],
    });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(issuePaths(res).sort()).toEqual(["batch.1.event", "batch.3.userId", "batch.5.groupId"]);
    const stored = new Set((await listEvents(t)).map((e) => e.messageId));
    for (const g of good) expect(stored.has(g.messageId)).toBe(false);
  });

  it("an empty batch or a batch that is not an array → 400", async () => {
    for (const batch of [[], {}, "x", null]) expectError(await ingest(t, "batch", { batch }), 400, "VALIDATION_FAILED");
  });
});

describe("values PostgreSQL cannot store and hostile nesting", () => {
  it("100 000 levels of `[` (balanced or not) and of objects → 400, no crash", async () => {
    const n = 100_000;
    const bodies = [
      "[".repeat(n),
      "[".repeat(n) + "]".repeat(n),
      `{"userId":"u","event":"E","properties":{"a":${"[".repeat(n)}${"]".repeat(n)}}}`,
      `{"userId":"u","event":"E","properties":${'{"a":'.repeat(80_000)}1${"}".repeat(80_000)}}`,
    ];
    for (const body of bodies) {
      expect(body.length).toBeLessThan(500 * 1024);
      expectError(await raw("/v1/batch", body), 400, "VALIDATION_FAILED");
      expectError(await raw("/v1/track", body), 400, "VALIDATION_FAILED");
    }
    const gz = gzipSync("[".repeat(400_000) + "]".repeat(100_000));
    expectError(await raw("/v1/batch", gz, { "content-encoding": "gzip" }), 400, "VALIDATION_FAILED");
  });

  it("nesting beyond 64 levels is refused, ordinary nesting accepted", async () => {
    const nest = (depth: number) => {
      let v: unknown = "leaf";
      for (let i = 0; i < depth; i++) v = { k: v };
      return v;
    };
    expectError(await ingest(t, "track", track({ properties: nest(70) })), 400, "VALIDATION_FAILED");
    const ok = track({ properties: nest(20) });
    expect204(await ingest(t, "track", ok));
    const [stored] = (await listEvents(t)).filter((e) => e.messageId === ok.messageId);
    expect(stored.payload.properties).toEqual(nest(20));
  });

  it("NUL characters in values and in keys → 400 naming where", async () => {
    let res = await ingest(t, "track", track({ properties: { note: "a\u0000b" } }));
    expectError(res, 400, "VALIDATION_FAILED");
    expect(issuePaths(res)).toEqual(["properties.note"]);
    res = await ingest(t, "track", track({ properties: { "bad\u0000key": 1 } }));
    expectError(res, 400, "VALIDATION_FAILED");
    res = await ingest(t, "batch", { batch: [track(), track({ event: "E\u0000" })] });
    expectError(res, 400, "VALIDATION_FAILED");
    expect(issuePaths(res)).toEqual(["batch.1.event"]);
    expectError(await ingest(t, "identify", { userId: "u\u0000", traits: {} }), 400, "VALIDATION_FAILED");
  });

  it("lone surrogates → 400; valid astral characters are stored intact", async () => {
    for (const s of ['"\\ud800"', '"x\\udfffy"', '"\\ud83d"']) {
      const body = `{"userId":"u","event":"E","properties":{"s":${s}}}`;
      const res = await raw("/api/public/apps/track", body);
      expectError(res, 400, "VALIDATION_FAILED");
      expect(issuePaths(res)).toEqual(["properties.s"]);
    }
    expectError(await raw("/api/public/apps/track", '{"userId":"u","event":"E","properties":{"\\udc00":1}}'), 400, "VALIDATION_FAILED");
    const ok = track({ properties: { s: "emoji 😀 ok" } });
    expect204(await ingest(t, "track", ok));
    const [stored] = (await listEvents(t)).filter((e) => e.messageId === ok.messageId);
    expect(stored.payload.properties.s).toBe("emoji 😀 ok");
  });

  it("__proto__ keys do not pollute and are dropped", async () => {
    const ev = track();
    const body = JSON.stringify(ev).replace(/}$/, ',"properties":{"__proto__":{"polluted":true},"kept":1}}');
    expect204(await raw("/v1/track", body));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const [stored] = (await listEvents(t)).filter((e) => e.messageId === ev.messageId);
    expect(stored.payload.properties).toEqual({ kept: 1 });
    // A deep chain of __proto__ keys goes with its top key: nothing deep is left to store.
    const deep = track();
    const chain = JSON.stringify(deep).replace(/}$/, `,"properties":${'{"__proto__":'.repeat(30_000)}1${"}".repeat(30_000)}}`);
    expect204(await raw("/v1/track", chain));
    const [deepStored] = (await listEvents(t)).filter((e) => e.messageId === deep.messageId);
    expect(deepStored.payload.properties).toEqual({});
  });

  it("constructor keys holding a prototype are dropped, other constructor values kept", async () => {
    const ev = track();
    const body = JSON.stringify(ev).replace(
      /}$/,
      ',"properties":{"constructor":{"prototype":{"polluted":true}},"nested":{"constructor":"Car"}}}',
    );
    expect204(await raw("/v1/track", body));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const [stored] = (await listEvents(t)).filter((e) => e.messageId === ev.messageId);
    expect(stored.payload.properties).toEqual({ nested: { constructor: "Car" } });
  });
});
