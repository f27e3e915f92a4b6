// What a newcomer reads when a call fails (issue 21, item 5): the message names the first issue
// and what to do, a network error names the host and port, and `close()` against a server that
// never answers gives up within `closeTimeoutMs`. Against the running server and a silent socket.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTidingsApiError, Tidings, TidingsAdmin, type TidingsApiError } from "../src/index.js";
import { newWorkspace, server, type Workspace } from "./support/env.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace();
});

async function rejection(p: Promise<unknown>): Promise<TidingsApiError> {
  try {
    await p;
  } catch (err) {
    expect(isTidingsApiError(err)).toBe(true);
    return err as TidingsApiError;
  }
  throw new Error("expected a rejection");
}

describe("admin errors say what to fix", () => {
  it("a name where the id goes: the message names params.id and says to pass the id", async () => {
    const err = await rejection(ws.admin.segments.get("Pro users"));
    expect(err.code).toBe("VALIDATION_FAILED");
    expect(err.message).toMatch(/params\.id: Invalid UUID — pass the id; names are accepted by the CLI \(`tidings segments get <name>`\)/);
    expect(err.issues[0]).toMatchObject({ path: "params.id" });
  });

  it("a body error: the message names the first issue (all of them stay in issues)", async () => {
    const err = await rejection(
      ws.admin.segments.upsert({ name: "x", definition: { entryNode: { type: "Nope", id: "n" }, nodes: [] } } as never),
    );
    expect(err.message).toContain(`: ${err.issues[0]!.path}: ${err.issues[0]!.message}`);
  });

  it("a segment's members are reachable as segments.users.list", async () => {
    const segment = await ws.admin.segments.upsert({ name: "Members" });
    await ws.admin.segments.members.put(segment.id, { add: ["ada", "bob"] });
    // Membership is applied by the segment engine, within a second.
    let members = await ws.admin.segments.users.list(segment.id).toArray();
    for (let i = 0; i < 50 && members.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      members = await ws.admin.segments.users.list(segment.id).toArray();
    }
    expect(members.map((m) => m.userId).sort()).toEqual(["ada", "bob"]);
    expect(members[0]!.enteredAt).toEqual(expect.any(Number));
  });
});

describe("network errors name the host and port", () => {
  it("admin: connection refused", async () => {
    const admin = new TidingsAdmin({ apiKey: "tda_x", host: "http://127.0.0.1:9", maxRetries: 0 });
    const err = await rejection(admin.users.get("u"));
    expect(err).toMatchObject({ code: "NETWORK", status: 0 });
    expect(err.message).toBe("Cannot reach 127.0.0.1:9: ECONNREFUSED");
    await admin.close();
  });

  it("ingestion: onError names the host and port", async () => {
    const errors: TidingsApiError[] = [];
    const tidings = new Tidings({ writeKey: "w", host: "http://127.0.0.1:9", maxRetries: 0, onError: (e) => errors.push(e) });
    tidings.track({ userId: "u", event: "E" });
    await tidings.close();
    expect(errors.map((e) => e.message)).toEqual(["Cannot reach 127.0.0.1:9: ECONNREFUSED"]);
  });
});

describe("close() against a server that never answers", () => {
  let silent: net.Server;
  let host: string;
  const sockets = new Set<net.Socket>();
  beforeAll(async () => {
    silent = net.createServer((s) => {
      sockets.add(s);
      s.on("error", () => {});
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    host = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it("gives up after the default closeTimeoutMs (10 s), reporting each event once to onError", async () => {
    const errors: { error: TidingsApiError; n: number }[] = [];
    const tidings = new Tidings({ writeKey: "w", host, onError: (error, events) => errors.push({ error, n: events.length }) });
    for (let i = 0; i < 3; i++) tidings.track({ userId: "u", event: `E${i}` });
    const started = Date.now();
    await tidings.close();
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(9_900);
    expect(elapsed).toBeLessThan(11_500);
    expect(errors.reduce((sum, e) => sum + e.n, 0)).toBe(3);
    expect(errors[0]!.error).toMatchObject({ code: "NETWORK" });
    expect(errors[0]!.error.message).toMatch(/^Not delivered: close\(\) gave up after 10000 ms sending to 127\.0\.0\.1:\d+$/);
  }, 20_000);

  it("closeTimeoutMs shortens it; the real server still gets every event when it answers", async () => {
    const errors: unknown[] = [];
    const quick = new Tidings({ writeKey: "w", host, closeTimeoutMs: 300, onError: (e) => errors.push(e) });
    quick.track({ userId: "u", event: "E" });
    const started = Date.now();
    await quick.close();
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(errors).toHaveLength(1);

    const ok = new Tidings({ writeKey: ws.writeKey, host: server().url, closeTimeoutMs: 300, onError: (e) => errors.push(e) });
    ok.track({ userId: "close-ok", event: "Sent" });
    await ok.close();
    expect(errors).toHaveLength(1);
    const events = await ws.admin.events.list({ userId: "close-ok" }).toArray();
    expect(events.map((e) => e.event)).toEqual(["Sent"]);
  });
});
