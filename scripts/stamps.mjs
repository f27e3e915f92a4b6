// Build stamps: which workspace packages' dist/ is up to date with their inputs.
//
// A package's key is a sha256 over its build inputs (src/ without src/generated, package.json,
// tsup, vite and tsconfig files, index.html, prisma/schema.prisma and scripts/ where present), the shared inputs
// (tsconfig.base.json, pnpm-lock.yaml, this file and build.mjs) and the keys of the workspace
// packages it depends on, so a change in @tidings/schema also rebuilds what is built against it.
// Contents are hashed, not mtimes: a checkout or `touch` that leaves a file unchanged costs no
// rebuild. After a successful build, a stamp records the key and a hash of every file the build
// wrote to dist/; the package is fresh while both still hold, so a dist/ rebuilt by a package's
// own `build` script from other sources counts as stale. The stamp lives in the package's
// node_modules/.cache, not in dist/, so it is never published.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";

/** Where the stamp of the package in `dir` lives. */
const stampPath = (dir) => join(dir, "node_modules", ".cache", "tidings-build-stamp.json");

const PACKAGE_INPUTS = [
  "src",
  "package.json",
  "tsup.config.ts",
  "vite.config.ts",
  "index.html",
  "tsconfig.json",
  "prisma/schema.prisma",
  "scripts",
];
const SKIPPED_DIRS = new Set(["src/generated", "node_modules", "dist"]);
const SHARED_INPUTS = ["tsconfig.base.json", "pnpm-lock.yaml", "scripts/build.mjs", "scripts/stamps.mjs"];

/** Workspace packages that have a build script: { name, dir, deps (workspace package names) }. */
export function listPackages(root) {
  const workspace = readFileSync(join(root, "pnpm-workspace.yaml"), "utf8");
  const globs = [...workspace.matchAll(/^\s+-\s+["']?([\w./-]+)\/\*["']?\s*$/gm)].map((m) => m[1]);
  const manifests = globs.flatMap((parent) => {
    const parentDir = join(root, parent);
    if (!existsSync(parentDir)) return [];
    return readdirSync(parentDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(parentDir, d.name, "package.json")))
      .map((d) => join(parentDir, d.name));
  });
  const packages = manifests.map((dir) => ({ dir, pkg: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) }));
  const names = new Set(packages.map((p) => p.pkg.name));
  return packages
    .filter((p) => p.pkg.scripts?.build)
    .map(({ dir, pkg }) => ({
      name: pkg.name,
      dir,
      deps: Object.keys({ ...pkg.dependencies, ...pkg.devDependencies, ...pkg.peerDependencies }).filter((d) => names.has(d)),
    }));
}

/** Every file under `path` (a file or a directory), sorted, relative to `base`. */
function filesUnder(base, path) {
  const full = join(base, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { withFileTypes: true })
    .filter((d) => !SKIPPED_DIRS.has(relative(base, join(full, d.name)).split(sep).join("/")))
    .flatMap((d) => filesUnder(base, join(path, d.name)))
    .sort();
}

const fileHash = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

function hashFiles(hash, base, paths) {
  for (const path of paths) {
    for (const file of filesUnder(base, path)) hash.update(`${file.split(sep).join("/")}\0${fileHash(join(base, file))}\0`);
  }
}

/** name → input key, for every package of `listPackages(root)`. */
export function inputKeys(root, packages = listPackages(root)) {
  const shared = createHash("sha256");
  hashFiles(shared, root, SHARED_INPUTS);
  const sharedKey = shared.digest("hex");

  const byName = new Map(packages.map((p) => [p.name, p]));
  const keys = new Map();
  const keyOf = (name, seen = []) => {
    if (keys.has(name)) return keys.get(name);
    if (seen.includes(name)) throw new Error(`workspace dependency cycle: ${[...seen, name].join(" → ")}`);
    const p = byName.get(name);
    const hash = createHash("sha256").update(sharedKey);
    hashFiles(hash, p.dir, PACKAGE_INPUTS);
    for (const dep of [...p.deps].sort()) if (byName.has(dep)) hash.update(`${dep}=${keyOf(dep, [...seen, name])}\0`);
    const key = hash.digest("hex");
    keys.set(name, key);
    return key;
  };
  for (const p of packages) keyOf(p.name);
  return keys;
}

/** file (relative to dist/) → content hash, for every file in the package's dist/. */
function outputHashes(dir) {
  const dist = join(dir, "dist");
  return Object.fromEntries(filesUnder(dist, ".").map((f) => [f.split(sep).join("/"), fileHash(join(dist, f))]));
}

function readStamp(dir) {
  try {
    return JSON.parse(readFileSync(stampPath(dir), "utf8"));
  } catch {
    return undefined;
  }
}

/** Fresh: the stamp names this key and dist/ holds exactly what the stamped build wrote. */
export function isFresh(dir, key) {
  const stamp = readStamp(dir);
  if (stamp?.key !== key || !stamp.outputs || Object.keys(stamp.outputs).length === 0) return false;
  return JSON.stringify(outputHashes(dir)) === JSON.stringify(stamp.outputs);
}

/** Records a successful build of `dir` from inputs with `key` (computed before the build ran). */
export function writeStamp(dir, key) {
  mkdirSync(dirname(stampPath(dir)), { recursive: true });
  writeFileSync(stampPath(dir), `${JSON.stringify({ key, outputs: outputHashes(dir) }, null, 2)}\n`);
}

/** The packages whose dist/ is missing or older than their inputs, with every package's key. */
export function planBuild(root) {
  const packages = listPackages(root);
  const keys = inputKeys(root, packages);
  return { packages, keys, stale: packages.filter((p) => !isFresh(p.dir, keys.get(p.name))) };
}
