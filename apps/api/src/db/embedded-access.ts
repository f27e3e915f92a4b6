// As root, the embedded PostgreSQL runs as the `postgres` user, which must be able to enter every
// directory above its data and its binaries. A clone under /root (mode 700) or in a mkdtemp
// directory is out of its reach; say so in one paragraph instead of failing with EACCES later.
import { statSync } from "node:fs";
import path from "node:path";

/** Does a user with these ids (null: a user not created yet, so neither owner nor group) have `bit` (1 = x, 4 = r)? */
function allowed(file: string, ids: { uid: number; gid: number } | null, bit: number): { ok: boolean; mode: number } {
  const st = statSync(file);
  const mode = st.mode & 0o777;
  const shift = ids && st.uid === ids.uid ? 6 : ids && st.gid === ids.gid ? 3 : 0;
  return { ok: ((mode >> shift) & bit) === bit, mode };
}

/** The first directory (or the file itself, which must be executable) above `target` the user cannot pass. */
function blockedAt(target: string, ids: { uid: number; gid: number } | null): { dir: string; mode: number } | null {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  for (const part of ["", ...parts]) {
    current = path.join(current, part);
    let check: { ok: boolean; mode: number };
    try {
      check = allowed(current, ids, 1);
    } catch {
      return null; // does not exist yet: it will be created for PostgreSQL
    }
    if (!check.ok) return { dir: current, mode: check.mode };
  }
  return null;
}

/**
 * Null when the `postgres` user can reach the data directory and the PostgreSQL binary, else a
 * paragraph naming the directory in the way and the ways out.
 */
export function postgresUserAccessProblem(dataDir: string, binary: string, ids: { uid: number; gid: number } | null): string | null {
  // The data directory itself is ours to create and open up; what lies above it is not.
  for (const [i, target] of [dataDir, binary].entries()) {
    const blocked = blockedAt(i === 0 ? path.dirname(path.resolve(target)) : target, ids);
    if (!blocked) continue;
    const where = `${blocked.dir} (mode ${blocked.mode.toString(8).padStart(3, "0")})`;
    return (
      "Tidings is running as root, so its embedded PostgreSQL runs as the `postgres` user, which cannot enter " +
      (i === 0
        ? `${where} on the way to its data directory ${path.resolve(target)}. Ways out: a data directory it can reach (TIDINGS_DATA_DIR; the test suites use the system temporary directory, TMPDIR); `
        : `${where} on the way to its program files in ${path.dirname(target)}. Ways out: a checkout outside ${blocked.dir}; `) +
      "a PostgreSQL server of your own (DATABASE_URL=postgres://… with TIDINGS_ROOT_KEY and TIDINGS_SECRET_KEY; TEST_DATABASE_URL for the test suites); " +
      `running as a user other than root; or letting others pass through that directory (chmod o+x ${blocked.dir}).`
    );
  }
  return null;
}
