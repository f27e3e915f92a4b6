// Table-driven credential checks shared by the admin resources' security tests: for every
// route, no key / a write key / an unknown key → 401, and a workspaceId naming another
// workspace → 403.
import { describe, expect, it } from "vitest";
import type { TestApp, TestWorkspace } from "./app.ts";
import { basic, bearer, request } from "./http.ts";

export interface AdminRoute {
  method: string;
  path: (id: string) => string;
  /** Body for the workspace; routes without one get `?workspaceId=` instead. */
  body?: (workspaceId: string) => unknown;
}

export interface AdminAuthSetup {
  t: TestApp;
  /** The caller's workspace. */
  a: TestWorkspace;
  /** Another workspace. */
  b: TestWorkspace;
  /** A resource id to put in `:id` paths. */
  id: string;
}

export function describeAdminRouteAuth(routes: AdminRoute[], setup: () => AdminAuthSetup) {
  describe.each(routes)("$method $path", (route) => {
    const call = (headers: Record<string, string>, workspaceId: string) => {
      const { t, id } = setup();
      const body = route.body?.(workspaceId);
      const query = body === undefined ? `?workspaceId=${workspaceId}` : "";
      return request(t.url, route.method, route.path(id) + query, { headers, ...(body !== undefined ? { body } : {}) });
    };

    it("answers 401 without a key and with a write key", async () => {
      const { a } = setup();
      for (const headers of [{}, basic(a.writeKey), bearer(a.writeKey), bearer("tdk_admin_nonsense")]) {
        const res = await call(headers, a.id);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe("UNAUTHORIZED");
      }
    });

    it("answers 403 when the workspaceId names another workspace", async () => {
      const { a, b } = setup();
      const res = await call(bearer(a.adminKey), b.id);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("FORBIDDEN");
    });
  });
}
