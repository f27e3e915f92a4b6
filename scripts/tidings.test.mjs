// `pnpm tidings` from a clone (issue 21, item 6): before a build, one line saying what to run,
// not a stack; once built, the CLI itself; and `pnpm -s` echoes no key given on the command line.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const repo = fileURLToPath(new URL("../", import.meta.url));

test("before a build: one line naming `pnpm build`, exit 2, no stack", () => {
  const clone = mkdtempSync(join(tmpdir(), "tidings-clone-"));
  try {
    mkdirSync(join(clone, "scripts"));
    copyFileSync(join(repo, "scripts/tidings.mjs"), join(clone, "scripts/tidings.mjs"));
    const res = spawnSync(process.execPath, [join(clone, "scripts/tidings.mjs"), "segments", "list"], { encoding: "utf8" });
    assert.equal(res.status, 2);
    assert.equal(res.stdout, "");
    assert.equal(res.stderr, "tidings: the CLI is not built in this clone yet: run `pnpm build` first, then `pnpm -s tidings …`\n");
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
});

const built = existsSync(join(repo, "packages/cli/dist/bin.js"));
const pnpmTidings = (args, env = {}) =>
  spawnSync("pnpm", ["-s", "tidings", "--host", "http://127.0.0.1:9", ...args, "segments", "list"], {
    cwd: repo,
    encoding: "utf8",
    env: { ...process.env, TIDINGS_API_KEY: "", XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "tidings-cfg-")), ...env },
  });
const secret = "tda_never_echoed_0123456789";

test("once built, `pnpm -s tidings` runs the CLI; a key from the environment is never echoed", { skip: !built }, () => {
  const res = pnpmTidings([], { TIDINGS_API_KEY: secret });
  assert.equal(res.status, 1, res.stderr);
  assert.match(res.stderr, /^error: cannot reach http:\/\/127\.0\.0\.1:9: ECONNREFUSED/m);
  assert.ok(!res.stdout.includes(secret) && !res.stderr.includes(secret), `${res.stdout}${res.stderr}`);
});

test("a key given as a flag through pnpm (which echoes it) gets a one-line warning naming the variable", { skip: !built }, () => {
  const res = pnpmTidings(["--api-key", secret]);
  assert.match(
    res.stderr,
    /^tidings: pnpm echoes --api-key into logs; set TIDINGS_API_KEY or save a profile with `tidings login` instead$/m,
  );
  const direct = spawnSync(
    process.execPath,
    [join(repo, "scripts/tidings.mjs"), "--api-key", secret, "--host", "http://127.0.0.1:9", "segments", "list"],
    {
      encoding: "utf8",
      env: { PATH: process.env.PATH, XDG_CONFIG_HOME: mkdtempSync(join(tmpdir(), "tidings-cfg-")) },
    },
  );
  assert.ok(!direct.stderr.includes("pnpm echoes"), direct.stderr);
});
