// The admin client against the real server (resources, pages, errors, workspaceId, broadcasts)
// and against a failing node:http server (retries of idempotent calls, unparseable answers).
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AdminResponse, isTidingsApiError, Tidings, TidingsAdmin, TidingsApiError } from "../src/index.js";
import { envelope, type FakeServer, fakeServer, type Reply } from "./support/fake-server.js";
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

describe("resources", () => {
  it("upserts, gets, changes members of and deletes a segment; responses are parsed", async () => {
    const segment = await ws.admin.segments.upsert({ name: "  VIPs " });
    expect(segment).toMatchObject({ name: "VIPs", workspaceId: ws.id });
    expect(typeof segment.createdAt).toBe("number");
    const got = await ws.admin.segments.get(segment.id);
    expect(got.id).toBe(segment.id);
    const members = await ws.admin.segments.members.put(segment.id, { add: ["alice", "bob"] });
    expect(members).toEqual({ added: 2, removed: 0, total: 2 });
    expect(await ws.admin.segments.delete(segment.id)).toBeUndefined();
    const gone = await rejection(ws.admin.segments.get(segment.id));
    expect(gone).toMatchObject({ name: "TidingsApiError", status: 404, code: "NOT_FOUND" });
  });

  it("iterates a list over several pages, and gets one page on demand", async () => {
    const names = Array.from({ length: 5 }, (_, i) => `page-test-${i}`);
    for (const name of names) await ws.admin.templates.upsert({ name, definition: { type: "Sms", body: `Hi ${name}` } });
    const pages: number[] = [];
    for await (const page of ws.admin.templates.list({ limit: 2 }).pages()) pages.push(page.items.length);
    expect(pages).toEqual([2, 2, 1]);
    const seen: string[] = [];
    for await (const t of ws.admin.templates.list({ limit: 2 })) seen.push(t.name);
    expect(seen).toEqual(names);
    const first = await ws.admin.templates.list({ limit: 2 }).page();
    expect(first.items.map((t) => t.name)).toEqual(names.slice(0, 2));
    expect(first.nextCursor).toEqual(expect.any(String));
    const rest = await ws.admin.templates.list({ limit: 10, cursor: first.nextCursor! }).toArray();
    expect(rest.map((t) => t.name)).toEqual(names.slice(2));
  });
});

describe("errors", () => {
  it("carry status, code, message, the request id the server logged, and the issues", async () => {
    const err = await rejection(
      ws.admin.segments.upsert({ name: "x", definition: { entryNode: { type: "Nope", id: "n" }, nodes: [] } } as never),
    );
    expect(err).toBeInstanceOf(TidingsApiError);
    expect(err).toMatchObject({ name: "TidingsApiError", status: 400, code: "VALIDATION_FAILED" });
    expect(err.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(err.issues.length).toBeGreaterThan(0);
    expect(err.issues[0]!.path).toMatch(/^definition\.entryNode/);
  });

  it("an unknown key is UNAUTHORIZED; a write key is not an admin key", async () => {
    const { url } = server();
    for (const apiKey of ["tda_nope", ws.writeKey]) {
      const err = await rejection(new TidingsAdmin({ apiKey, host: url }).segments.list().page());
      expect(err).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
    }
  });

  it("a server that cannot be reached is NETWORK (status 0)", async () => {
    const admin = new TidingsAdmin({ apiKey: "k", host: "http://127.0.0.1:9", maxRetries: 0 });
    const err = await rejection(admin.segments.get(randomUUID()));
    expect(err).toMatchObject({ status: 0, code: "NETWORK", requestId: undefined });
  });
});

describe("workspaceId", () => {
  it("is filled in wherever an operation takes it (the server checks it against the key)", async () => {
    const { url } = server();
    const other = await newWorkspace();
    const right = new TidingsAdmin({ apiKey: ws.adminKey, host: url, workspaceId: ws.id });
    const wrong = new TidingsAdmin({ apiKey: ws.adminKey, host: url, workspaceId: other.id });
    await right.segments.list().page();
    const created = await right.segments.upsert({ name: "ws-fill" });
    expect(created.workspaceId).toBe(ws.id);
    // In the query of a list, in the body of an upsert, and in an optional body left out.
    const calls = [() => wrong.segments.list().page(), () => wrong.segments.upsert({ name: "ws-fill" }), () => wrong.writeKeys.create()];
    for (const call of calls) expect(await rejection(call())).toMatchObject({ status: 403, code: "FORBIDDEN" });
  });
});

describe("broadcasts.wait", () => {
  it("polls until the broadcast finishes, reporting progress", async () => {
    const { url } = server();
    const tidings = new Tidings({ writeKey: ws.writeKey, host: url });
    for (let i = 0; i < 3; i++) tidings.identify({ userId: `reader-${i}`, traits: { email: `r${i}@example.test`, newsletter: true } });
    await tidings.close();
    const started = await ws.admin.broadcasts.execute({
      broadcastName: `news-${randomUUID()}`,
      segmentDefinition: {
        entryNode: { type: "Trait", id: "t", path: "newsletter", operator: { type: "Equals", value: true } },
        nodes: [],
      },
      messageTemplateDefinition: { type: "Email", from: "news@example.test", subject: "News", body: "<p>Hello {{ user.email }}</p>" },
    });
    const seen: AdminResponse<"broadcasts.get">[] = [];
    const done = await ws.admin.broadcasts.wait(started.broadcastId, { intervalMs: 100, onProgress: (b) => seen.push(b) });
    expect(done.status).toBe("Completed");
    expect(done.counts).toMatchObject({ audience: 3, sent: 3, pending: 0 });
    expect(seen.at(-1)).toEqual(done);
  });

  it("gives up after timeoutMs with TIMEOUT", async () => {
    const running = { id: randomUUID(), status: "Running" };
    fake = await fakeServer(() => ({ status: 200, body: broadcast(running) }));
    const admin = new TidingsAdmin({ apiKey: "k", host: fake.url });
    const err = await rejection(admin.broadcasts.wait(running.id, { intervalMs: 50, timeoutMs: 300 }));
    expect(err).toMatchObject({ status: 0, code: "TIMEOUT" });
    expect(fake.requests.length).toBeGreaterThanOrEqual(3);
  });
});

let fake: FakeServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function broadcast(over: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    workspaceId: randomUUID(),
    name: "b",
    status: "Completed",
    channel: "Email",
    counts: { audience: 1, sent: 1, failed: 0, skipped: 0, pending: 0 },
    createdAt: Date.now(),
    ...over,
  };
}

async function scripted(replies: Reply[]) {
  let n = 0;
  fake = await fakeServer(() => replies[Math.min(n++, replies.length - 1)]!);
  return new TidingsAdmin({ apiKey: "k", host: fake.url, retryBaseDelayMs: 10, retryMaxDelayMs: 50 });
}

describe("retries", () => {
  it("an idempotent call (GET) is retried on 503 and 429, honouring Retry-After", async () => {
    const b = broadcast();
    const admin = await scripted([
      { status: 503, headers: { "retry-after": "1" }, body: envelope("UNAVAILABLE", "busy") },
      { status: 429, body: envelope("RATE_LIMITED", "slow") },
      { status: 200, body: b },
    ]);
    const got = await admin.broadcasts.get(b.id);
    expect(got.id).toBe(b.id);
    const [first, second, third] = fake!.requests;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(third!.at - second!.at).toBeLessThan(500);
    expect(fake!.requests.map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill(`GET /api/admin/broadcasts/${b.id}`));
  });

  it("a POST is not retried, and a 500 is not retried", async () => {
    const admin = await scripted([{ status: 429, headers: { "retry-after": "0" }, body: envelope("RATE_LIMITED", "slow") }]);
    const err = await rejection(admin.broadcasts.cancel(randomUUID()));
    expect(err).toMatchObject({ status: 429, code: "RATE_LIMITED", requestId: "req-fake" });
    expect(fake!.requests).toHaveLength(1);
    await fake!.close();
    const again = await scripted([{ status: 500, body: envelope("INTERNAL", "Internal error") }]);
    await rejection(again.segments.get(randomUUID()));
    expect(fake!.requests).toHaveLength(1);
  });

  it("gives up after maxRetries with the server's error", async () => {
    const admin = await scripted([{ status: 503, body: envelope("UNAVAILABLE", "busy") }]);
    const err = await rejection(admin.segments.list().page());
    expect(err).toMatchObject({ status: 503, code: "UNAVAILABLE" });
    expect(fake!.requests).toHaveLength(4);
  });

  it("a 2xx body that does not match the operation's schema is INVALID_RESPONSE", async () => {
    const admin = await scripted([{ status: 200, body: { id: "not a segment" }, headers: { "x-request-id": "rid-1" } }]);
    const err = await rejection(admin.segments.get(randomUUID()));
    expect(err).toMatchObject({ status: 200, code: "INVALID_RESPONSE", requestId: "rid-1" });
    expect(err.issues.length).toBeGreaterThan(0);
  });
});
