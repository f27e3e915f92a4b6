// The README's `ts` examples, run as they are against the real server, and its table of
// defaults checked against the code.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { INGEST_DEFAULTS } from "../src/index.js";
import { newWorkspace, server, type Workspace } from "./support/env.js";

const readmePath = fileURLToPath(new URL("../README.md", import.meta.url));
const readme = await readFile(readmePath, "utf8");
const examples = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);

let ws: Workspace;
let dir: string;
beforeAll(async () => {
  ws = await newWorkspace();
  dir = await mkdtemp(path.join(os.tmpdir(), "tidings-readme-"));
  vi.stubEnv("TIDINGS_HOST", server().url);
  vi.stubEnv("TIDINGS_WRITE_KEY", ws.writeKey);
  vi.stubEnv("TIDINGS_API_KEY", ws.adminKey);
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

async function run(index: number): Promise<string[]> {
  const file = path.join(dir, `example-${index}.ts`);
  await writeFile(file, examples[index]!);
  const logged: string[] = [];
  const log = vi.spyOn(console, "log").mockImplementation((...args) => void logged.push(args.map(String).join(" ")));
  const error = vi.spyOn(console, "error").mockImplementation((...args) => void logged.push(`ERROR ${args.map(String).join(" ")}`));
  try {
    await import(/* @vite-ignore */ file);
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
  return logged;
}

describe("README", () => {
  it("has the six examples this test knows", () => {
    expect(examples).toHaveLength(6);
  });

  it("sending events: every event is stored", async () => {
    expect(await run(0)).toEqual([]);
    const user = await ws.admin.users.get("user-42");
    expect(user.traits).toMatchObject({ email: "ada@example.com", plan: "pro" });
    expect(user.identities).toContain("visitor-7");
    const events = await ws.admin.events.list({ userId: "user-42" }).toArray();
    expect(events.map((e) => e.type).sort()).toEqual(["alias", "identify", "page", "track"]);
  });

  it("a fetch of one's own", async () => {
    expect(await run(1)).toEqual([]);
    expect(await ws.admin.events.list({ userId: "edge-visitor" }).toArray()).toHaveLength(1);
  });

  it("sending a batch now: what became of each event", async () => {
    expect(await run(2)).toEqual(["2 accepted", "event 2 rejected: timestamp"]);
    const stored = await ws.admin.events.list({ userId: "user-7" }).toArray();
    expect(stored.map((e) => e.messageId).sort()).toEqual(["crm-7", "crm-8"]);
  });

  it("the admin API", async () => {
    const out = await run(3);
    expect(out[0]).toMatch(/^segment [0-9a-f-]{36}$/);
    expect(out).toContain("Pro plan");
    expect(out).toContainEqual(expect.stringMatching(/^no such segment \(request [0-9a-f-]{36}\)$/));
    expect(out.some((l) => l.startsWith("ERROR"))).toBe(false);
  });

  it("broadcasts", async () => {
    const out = await run(4);
    expect(out.at(-1)).toBe("1 sent, 0 skipped");
  });

  it("delivery policies", async () => {
    expect(await run(5)).toEqual(["three a day: 3, defer"]);
    expect((await ws.admin.policies.get()).sendWindows.map((w) => w.name)).toEqual(["daytime sms"]);
  });

  it("documents the defaults the code has", () => {
    const rows = new Map([...readme.matchAll(/^\| `(\w+)` \| `?([^|`]+?)`? \|/gm)].map((m) => [m[1]!, m[2]!]));
    for (const [name, value] of Object.entries(INGEST_DEFAULTS)) expect(rows.get(name), name).toBe(String(value));
  });
});
