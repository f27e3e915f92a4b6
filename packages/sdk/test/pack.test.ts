// The published package as users get it: the sdk and schema tarballs (`pnpm pack`) installed
// with npm into a fresh project, then imported from ESM and required from CommonJS, each
// sending an event and calling the admin API of the running server.
import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, server, type Workspace } from "./support/env.js";
import { REPO_ROOT } from "./support/server.js";

let dir: string;
let ws: Workspace;

const consumer = (load: string) => `${load}
async function main() {
  const errors = [];
  const tidings = new Tidings({ writeKey: process.env.TIDINGS_WRITE_KEY, host: process.env.TIDINGS_HOST, onError: (e) => errors.push(e.code) });
  tidings.track({ userId: process.env.USER_ID, event: "Packed" });
  await tidings.close();
  const admin = new TidingsAdmin({ apiKey: process.env.TIDINGS_API_KEY, host: process.env.TIDINGS_HOST });
  const events = await admin.events.list({ userId: process.env.USER_ID }).toArray();
  let notFound;
  try {
    await admin.segments.get("00000000-0000-4000-8000-000000000000");
  } catch (err) {
    notFound = { name: err.name, isApiError: isTidingsApiError(err), instance: err instanceof TidingsApiError, code: err.code };
  }
  // Issue 21, item 5: the message says what to fix; a network error names the host and port.
  const messageOf = (p) => p.then(() => "resolved", (err) => err.message);
  const byName = await messageOf(admin.segments.get("Pro users"));
  const dead = new TidingsAdmin({ apiKey: "tda_x", host: "http://127.0.0.1:9", maxRetries: 0 });
  const unreachable = await messageOf(dead.users.get("u"));
  // Issue 21, item 3: events in the order they were received (what tidings events tail follows).
  const received = await admin.events.list({ userId: process.env.USER_ID, order: "received", receivedSince: 0 }).toArray();
  console.log(JSON.stringify({ errors, events: events.map((e) => e.event), notFound, byName, unreachable, received: received.length }));
}
main().catch((err) => { console.error(err); process.exit(1); });
`;

beforeAll(async () => {
  ws = await newWorkspace();
  dir = await mkdtemp(path.join(os.tmpdir(), "tidings-pack-"));
  for (const pkg of ["schema", "sdk"]) {
    execFileSync("pnpm", ["pack", "--pack-destination", dir], { cwd: path.join(REPO_ROOT, "packages", pkg), stdio: "pipe" });
  }
  const tarballs = (await readdir(dir)).filter((f) => f.endsWith(".tgz")).map((f) => `./${f}`);
  expect(tarballs).toHaveLength(2);
  await writeFile(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error", ...tarballs], {
    cwd: dir,
    stdio: "pipe",
  });
  await writeFile(
    path.join(dir, "esm.mjs"),
    consumer(`import { Tidings, TidingsAdmin, TidingsApiError, isTidingsApiError } from "@tidings/sdk";`),
  );
  await writeFile(
    path.join(dir, "cjs.cjs"),
    consumer(`const { Tidings, TidingsAdmin, TidingsApiError, isTidingsApiError } = require("@tidings/sdk");`),
  );
}, 240_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function runConsumer(file: string, userId: string) {
  const out = execFileSync(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, TIDINGS_HOST: server().url, TIDINGS_WRITE_KEY: ws.writeKey, TIDINGS_API_KEY: ws.adminKey, USER_ID: userId },
    encoding: "utf8",
  });
  return JSON.parse(out.trim().split("\n").at(-1)!);
}

// Types a consumer compiles against: the declaration files of both tarballs, under node16 rules.
const typed = `import { type AdminItem, type AdminResponse, Tidings, TidingsAdmin, type TidingsEvent } from "@tidings/sdk";
const tidings = new Tidings({ writeKey: "k", host: "http://localhost:3000", onError: (e, events: TidingsEvent[]) => void [e.code, events[0]?.messageId] });
tidings.track({ userId: "u", event: "E", properties: { n: 1 } });
const admin = new TidingsAdmin({ apiKey: "k", host: "http://localhost:3000" });
export async function names(): Promise<string[]> {
  const s: AdminResponse<"segments.get"> = await admin.segments.get("id");
  const out = [s.name];
  for await (const t of admin.templates.list({ limit: 5 })) {
    const item: AdminItem<"templates.list"> = t;
    out.push(item.name);
  }
  // @ts-expect-error the path parameter is required
  await admin.users.get();
  return out;
}
`;

describe("the packed package", () => {
  it("type-checks a TypeScript consumer (node16 resolution, strict)", async () => {
    await writeFile(path.join(dir, "typed.mts"), typed);
    const tsc = path.join(REPO_ROOT, "packages/sdk/node_modules/typescript/bin/tsc");
    const args = [
      "--noEmit",
      "--strict",
      "--module",
      "node16",
      "--moduleResolution",
      "node16",
      "--target",
      "es2022",
      "--lib",
      "es2022",
      "--skipLibCheck",
      "typed.mts",
    ];
    try {
      execFileSync(process.execPath, [tsc, ...args], { cwd: dir, stdio: "pipe", encoding: "utf8" });
    } catch (err) {
      throw new Error(`tsc failed:\n${(err as { stdout?: string }).stdout}`);
    }
  });

  it.each([
    ["esm.mjs", "esm-user"],
    ["cjs.cjs", "cjs-user"],
  ])("%s sends an event, lists it and gets a typed error", (file, userId) => {
    expect(runConsumer(file, userId)).toEqual({
      errors: [],
      events: ["Packed"],
      notFound: { name: "TidingsApiError", isApiError: true, instance: true, code: "NOT_FOUND" },
      byName: expect.stringMatching(/params\.id: Invalid UUID — pass the id; names are accepted by the CLI/),
      unreachable: "Cannot reach 127.0.0.1:9: ECONNREFUSED",
      received: 1,
    });
  });
});
