#!/usr/bin/env node
// Generates the Prisma client (src/generated/prisma) from prisma/schema.prisma, offline.
//
// Why a wrapper instead of a bare `prisma generate`:
// - Every prisma CLI command first makes sure a native schema engine exists and tries to
//   download it when it does not. There is no internet here (only the npm registry), so we
//   point PRISMA_SCHEMA_ENGINE_BINARY at a stub that exits 1 loudly. `generate` never runs
//   the engine (the client's query compiler is wasm), it only checks that the file exists.
// - The update notifier and the telemetry "checkpoint" would also try to reach the network.
// - `pnpm generate` runs before build/dev/test/typecheck; skipping an up-to-date client keeps
//   those fast. A stamp file written after a successful run records the prisma version, so
//   upgrading prisma or editing the schema (or this script) triggers a regeneration.
//
// Usage: node scripts/prisma-generate.mjs [--force]   (or FORCE_PRISMA_GENERATE=1)

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const scriptPath = fileURLToPath(import.meta.url);
const apiDir = join(dirname(scriptPath), "..");
const schemaPath = join(apiDir, "prisma", "schema.prisma");
const outputDir = join(apiDir, "src", "generated", "prisma"); // `output` in schema.prisma
const stampPath = join(outputDir, ".generated-by");
const prismaBin = join(apiDir, "node_modules", ".bin", "prisma");
const engineStub = join(apiDir, "scripts", "no-schema-engine.sh");

const force = process.argv.includes("--force") || process.env.FORCE_PRISMA_GENERATE === "1";

function prismaVersion() {
  const pkg = join(apiDir, "node_modules", "prisma", "package.json");
  return JSON.parse(readFileSync(pkg, "utf8")).version;
}

/** The client is fresh when the stamp is newer than every input and names the same prisma. */
function isUpToDate(version) {
  if (!existsSync(stampPath) || !existsSync(join(outputDir, "client.ts"))) return false;
  if (readFileSync(stampPath, "utf8").trim() !== `prisma@${version}`) return false;
  const stampTime = statSync(stampPath).mtimeMs;
  return [schemaPath, scriptPath].every((input) => statSync(input).mtimeMs <= stampTime);
}

if (!existsSync(prismaBin)) {
  console.error(`prisma-generate: ${prismaBin} is missing; run \`pnpm install\` first.`);
  process.exit(1);
}

const version = prismaVersion();
if (!force && isUpToDate(version)) {
  console.log(`prisma-generate: ${relative(apiDir, outputDir)} is up to date (prisma@${version}).`);
  process.exit(0);
}

const result = spawnSync(prismaBin, ["generate", "--schema", schemaPath], {
  cwd: apiDir,
  stdio: "inherit",
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: engineStub,
    PRISMA_HIDE_UPDATE_MESSAGE: "1", // no update check against the registry
    CHECKPOINT_DISABLE: "1", // no telemetry / version checkpoint request
  },
});

if (result.error) {
  console.error(`prisma-generate: could not run ${prismaBin}: ${result.error.message}`);
  process.exit(1);
}
if (result.status !== 0) {
  console.error(`prisma-generate: prisma generate failed (exit ${result.status ?? result.signal}).`);
  process.exit(result.status ?? 1);
}

// Written last, so an interrupted or failed generation is retried on the next run.
writeFileSync(stampPath, `prisma@${version}\n`);
