// `pnpm start` skips builds that are up to date: these tests pin when a package counts as stale.
// Run by `pnpm test` (node --test) on a throwaway workspace shaped like ours.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";
import { planBuild, writeStamp } from "./stamps.mjs";

let root;

function write(path, text) {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

function manifest(name, deps = {}) {
  return JSON.stringify({ name, scripts: { build: "tsup" }, dependencies: deps });
}

/** Pretends every stale package was built: writes its dist output and its stamp. */
function buildStale() {
  const { stale, keys } = planBuild(root);
  for (const p of stale) {
    mkdirSync(join(p.dir, "dist"), { recursive: true });
    writeFileSync(join(p.dir, "dist", "index.js"), "built");
    writeStamp(p.dir, keys.get(p.name));
  }
  return stale.map((p) => p.name).sort();
}

const staleNames = () =>
  planBuild(root)
    .stale.map((p) => p.name)
    .sort();

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "tidings-stamps-"));
  write("pnpm-workspace.yaml", "packages:\n  - packages/*\n  - apps/*\n\nallowBuilds:\n  esbuild: true\n");
  write("tsconfig.base.json", "{}");
  write("pnpm-lock.yaml", "lockfileVersion: '9.0'\n");
  write("packages/schema/package.json", manifest("@t/schema"));
  write("packages/schema/src/index.ts", "export const a = 1;\n");
  write("packages/sdk/package.json", manifest("@t/sdk", { "@t/schema": "workspace:^" }));
  write("packages/sdk/src/index.ts", "export const b = 2;\n");
  write("packages/notes/package.json", JSON.stringify({ name: "@t/notes" })); // no build script
  write("apps/api/package.json", manifest("@t/api", { "@t/schema": "workspace:^", fastify: "^5" }));
  write("apps/api/src/main.ts", "console.log('api');\n");
  write("apps/api/prisma/schema.prisma", "model A { id Int @id }\n");
  write("apps/api/src/generated/prisma/client.ts", "// generated\n");
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

test("a package never built is stale; once built and unchanged, nothing is rebuilt", () => {
  assert.deepEqual(buildStale(), ["@t/api", "@t/schema", "@t/sdk"]);
  assert.deepEqual(staleNames(), []);
});

test("an edited source file rebuilds its package and the packages built against it", () => {
  buildStale();
  write("packages/schema/src/index.ts", "export const a = 3;\n");
  assert.deepEqual(staleNames(), ["@t/api", "@t/schema", "@t/sdk"]);
  buildStale();
  write("packages/sdk/src/index.ts", "export const b = 4;\n");
  assert.deepEqual(staleNames(), ["@t/sdk"]);
});

test("a new or deleted source file counts as a change", () => {
  buildStale();
  write("apps/api/src/extra.ts", "export {};\n");
  assert.deepEqual(staleNames(), ["@t/api"]);
  buildStale();
  unlinkSync(join(root, "apps/api/src/extra.ts"));
  assert.deepEqual(staleNames(), ["@t/api"]);
});

test("the prisma schema, package.json, tsup and tsconfig files are inputs too", () => {
  buildStale();
  for (const [file, text] of [
    ["apps/api/prisma/schema.prisma", "model B { id Int @id }\n"],
    ["apps/api/tsup.config.ts", "export default {};\n"],
    ["apps/api/package.json", manifest("@t/api", { "@t/schema": "workspace:^", fastify: "^5.1" })],
  ]) {
    write(file, text);
    assert.deepEqual(staleNames(), ["@t/api"], file);
    buildStale();
  }
  write("tsconfig.base.json", '{"compilerOptions":{}}');
  assert.deepEqual(staleNames(), ["@t/api", "@t/schema", "@t/sdk"]);
});

test("a touched file with the same content, or a regenerated prisma client, rebuilds nothing", () => {
  buildStale();
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(root, "packages/schema/src/index.ts"), later, later);
  write("apps/api/src/generated/prisma/client.ts", "// generated again\n");
  assert.deepEqual(staleNames(), []);
});

test("a missing output, a removed dist or a dist built by other means rebuilds the package", () => {
  buildStale();
  unlinkSync(join(root, "packages/sdk/dist/index.js"));
  assert.deepEqual(staleNames(), ["@t/sdk"]);
  buildStale();
  rmSync(join(root, "apps/api/dist"), { recursive: true });
  assert.deepEqual(staleNames(), ["@t/api"]);
  buildStale();
  // e.g. `pnpm --filter @tidings/schema build` run on an edit that was then undone
  write("packages/schema/dist/index.js", "built from other sources");
  assert.deepEqual(staleNames(), ["@t/schema"]);
});
