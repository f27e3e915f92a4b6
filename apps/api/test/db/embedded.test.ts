// The settings the embedded PostgreSQL starts with (the test run's own server is one).
import pg from "pg";
import { describe, expect, it, inject } from "vitest";

describe.skipIf(process.env.TEST_DATABASE_URL)("embedded PostgreSQL", () => {
  it("listens on loopback only and creates WAL segments without zero-filling them", async () => {
    const c = new pg.Client({ connectionString: inject("adminUrl") });
    await c.connect();
    try {
      const show = async (name: string) => (await c.query(`SHOW ${name}`)).rows[0][name];
      expect(await show("listen_addresses")).toBe("127.0.0.1");
      // Zero-filling a new 16 MB segment stalled commits for 25–150 ms under load.
      expect(await show("wal_init_zero")).toBe("off");
    } finally {
      await c.end();
    }
  });
});
