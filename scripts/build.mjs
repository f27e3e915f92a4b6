#!/usr/bin/env node
// Builds the workspace packages (each with its own `build` script, in dependency order).
//   node scripts/build.mjs            every package (`pnpm build`)
//   node scripts/build.mjs --changed  only packages whose inputs changed since their last build
//                                     (`pnpm start`: a restart with no source change skips tsup,
//                                     declaration builds and prisma generate altogether)
// Either way each package built successfully gets a stamp of its inputs (see stamps.mjs).

import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { planBuild, writeStamp } from "./stamps.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const changedOnly = process.argv.includes("--changed");

const { packages, keys, stale } = planBuild(root);
const todo = changedOnly ? stale : packages;
if (todo.length === 0) {
  console.log("build: every package is up to date");
  process.exit(0);
}
if (changedOnly) console.log(`build: ${todo.map((p) => p.name).join(", ")} changed since the last build`);

const args = ["-r", ...todo.flatMap((p) => ["--filter", p.name]), "build"];
const result = spawnSync("pnpm", args, { cwd: root, stdio: "inherit" });
if (result.error) {
  console.error(`build: could not run pnpm: ${result.error.message}`);
  process.exit(1);
}
if (result.status !== 0) process.exit(result.status ?? 1);

// Keys were taken before the build, so an input edited while it ran is rebuilt next time.
for (const p of todo) writeStamp(p.dir, keys.get(p.name));
