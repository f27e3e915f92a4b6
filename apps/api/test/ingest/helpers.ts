// Shared by the ingestion suites: sending events, reading them back, checking error envelopes.
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { TestApp, TestWorkspace } from "../support/app.ts";
import { basic, bearer, request, type Res } from "../support/http.ts";

export const PREFIXES = ["/api/public/apps", "/v1"] as const;
export const KINDS = ["identify", "track", "page", "screen", "group", "alias"] as const;
export type Kind = (typeof KINDS)[number];

export const mid = (tag = "m") => `${tag}-${randomUUID()}`;

/** A minimal valid body of each single-event kind (type omitted: the path implies it). */
export function minimalEvent(kind: Kind, userId = "u-min"): Record<string, unknown> & { messageId: string } {
  const base = { userId, messageId: mid(kind) };
  switch (kind) {
    case "identify":
      return { ...base, traits: { plan: "free" } };
    case "track":
      return { ...base, event: "Clicked" };
    case "page":
    case "screen":
      return { ...base, name: "Home" };
    case "group":
      return { ...base, groupId: "g-min" };
    case "alias":
      return { ...base, previousId: `prev-${randomUUID()}` };
  }
}

export function ingest(t: TestApp, path: string, body: unknown, key = t.workspace.writeKey): Promise<Res> {
  return request(t.url, "POST", path.startsWith("/") ? path : `/api/public/apps/${path}`, { headers: basic(key), body });
}

export function expect204(res: Res): void {
  expect(res.status, res.text).toBe(204);
  expect(res.text).toBe("");
}

/** Asserts the error envelope of PRODUCT §9. */
export function expectError(res: Res, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.body.error).toMatchObject({ code, message: expect.any(String), requestId: expect.any(String) });
  expect(Object.keys(res.body)).toEqual(["error"]);
}

export const issuePaths = (res: Res): string[] => (res.body.error.issues ?? []).map((i: { path: string }) => i.path);

/** Every event of the workspace matching the query, following cursors. */
export async function listEvents(t: TestApp, query: Record<string, string> = {}, ws: TestWorkspace = t.workspace) {
  const items: any[] = [];
  let cursor: string | null = null;
  do {
    const qs: URLSearchParams = new URLSearchParams({ limit: "500", ...query, ...(cursor ? { cursor } : {}) });
    const res: Res = await request(t.url, "GET", `/api/admin/events?${qs}`, { headers: bearer(ws.adminKey) });
    expect(res.status, res.text).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.nextCursor;
  } while (cursor);
  return items;
}

export async function getUser(t: TestApp, userId: string, ws: TestWorkspace = t.workspace) {
  return request(t.url, "GET", `/api/admin/users/${encodeURIComponent(userId)}`, { headers: bearer(ws.adminKey) });
}

export async function expectAlive(t: TestApp) {
  const res = await request(t.url, "GET", "/health/live");
  expect(res.status).toBe(200);
}
