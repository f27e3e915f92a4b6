// Every (name, id)-ordered list route answers a forged cursor with 400, never a database error.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const forged = Buffer.from(JSON.stringify(["a", "not-a-uuid"])).toString("base64url");

describe("list cursors", () => {
  for (const path of ["segments", "subscription-groups", "journeys", "content/templates"]) {
    it(`/api/admin/${path} refuses a cursor whose id is not a UUID`, async () => {
      const res = await request(t.url, "GET", `/api/admin/${path}?cursor=${forged}`, { headers: bearer(t.workspace.adminKey) });
      expect(res.status).toBe(400);
      expect(res.body.error.issues).toEqual([{ path: "cursor", message: "not a cursor returned by this endpoint" }]);
    });
  }
});
