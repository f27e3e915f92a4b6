#!/usr/bin/env node
// Removes from a `pnpm deploy --prod` directory (the container image's /app) files production never
// loads: the Prisma client's query compilers for the databases other than PostgreSQL, its edge
// build, source maps and typings, and the @types/* packages some dependencies list as dependencies.
// Usage: node scripts/prune-deploy.mjs <deploy dir>
import { lstatSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";

const root = process.argv[2];
if (!root) {
  process.stderr.write("usage: prune-deploy.mjs <deploy dir>\n");
  process.exit(2);
}
const store = path.join(root, "node_modules", ".pnpm");

/** Files of @prisma/client/runtime that the bundled PostgreSQL client (query_compiler_fast_bg.postgresql.*) never imports. */
const PRISMA_UNUSED = /\.(mysql|sqlite|sqlserver|cockroachdb)\.|^query_compiler_small_bg\.|^wasm-compiler-edge\.|\.map$|\.d\.m?ts$/;

function size(p) {
  const s = lstatSync(p); // links (pnpm's node_modules) count once, where they point
  if (!s.isDirectory()) return s.size;
  return readdirSync(p).reduce((sum, name) => sum + size(path.join(p, name)), 0);
}

let removed = 0;
function remove(p) {
  removed += size(p);
  rmSync(p, { recursive: true, force: true });
}

for (const entry of readdirSync(store)) {
  if (entry.startsWith("@types+")) remove(path.join(store, entry));
  else if (entry.startsWith("@prisma+client@")) {
    const runtime = path.join(store, entry, "node_modules", "@prisma", "client", "runtime");
    for (const file of readdirSync(runtime)) if (PRISMA_UNUSED.test(file)) remove(path.join(runtime, file));
  }
}
process.stdout.write(`prune-deploy: removed ${(removed / 1e6).toFixed(1)} MB; ${root} holds ${(size(root) / 1e6).toFixed(1)} MB\n`);
