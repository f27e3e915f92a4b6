// Run as root from a directory the `postgres` user cannot enter (a clone under /root, a mkdtemp
// directory): the embedded PostgreSQL must stop at once with one paragraph naming the directory
// and the ways out, not with an EACCES stack from initdb.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { postgresUserAccessProblem } from "../../src/db/embedded-access.ts";
import { startEmbeddedPostgres } from "../../src/db/embedded.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A directory of mode 700 owned by us (mkdtemp's default), like /root. */
async function privateDir() {
  const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-private-"));
  dirs.push(dir);
  return dir;
}

const postgresUser = { uid: 64_001, gid: 64_001 };

describe("the postgres user's access", () => {
  it("names the private directory above the data directory, and the ways out", async () => {
    const dir = await privateDir();
    const problem = postgresUserAccessProblem(path.join(dir, "data"), process.execPath, postgresUser);
    expect(problem).toContain(`cannot enter ${dir} (mode 700) on the way to its data directory ${path.join(dir, "data")}`);
    for (const way of ["TIDINGS_DATA_DIR", "DATABASE_URL", "TEST_DATABASE_URL", "other than root", `chmod o+x ${dir}`]) {
      expect(problem).toContain(way);
    }
  });

  it("names the private directory above the PostgreSQL binaries (a clone under /root)", async () => {
    const dir = await privateDir();
    await mkdir(path.join(dir, "clone"));
    const problem = postgresUserAccessProblem(os.tmpdir(), path.join(dir, "clone", "bin", "postgres"), postgresUser);
    expect(problem).toContain(`cannot enter ${dir} (mode 700) on the way to its program files`);
    expect(problem).toContain(`a checkout outside ${dir}`);
  });

  it("passes reachable paths, and directories the user owns", async () => {
    expect(postgresUserAccessProblem(path.join(os.tmpdir(), "x"), process.execPath, postgresUser)).toBeNull();
    const dir = await privateDir();
    const me = { uid: process.getuid!(), gid: process.getgid!() };
    expect(postgresUserAccessProblem(path.join(dir, "data"), process.execPath, me)).toBeNull();
  });

  it.skipIf(process.getuid?.() !== 0)("as root, startEmbeddedPostgres stops at once with that paragraph", async () => {
    const dir = await privateDir();
    await expect(startEmbeddedPostgres({ dataDir: path.join(dir, "data") })).rejects.toThrow(
      /cannot enter .* Ways out: .*TIDINGS_DATA_DIR/,
    );
    expect(existsSync(path.join(dir, "data"))).toBe(false); // stopped before creating anything
  });
});
