// Saved keys are never lost: credentials.json belongs to the embedded database of its data
// directory. A start with DATABASE_URL never writes it, a key from the environment never
// overwrites a saved one, and keys created by a start that then fails to listen are not lost.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { resolveSecrets } from "../../src/auth/bootstrap.ts";
import { loadConfig } from "../../src/config.ts";
import { startTidings } from "../../src/app/server.ts";
import { createTestDatabase } from "../support/app.ts";

const API_DIR = fileURLToPath(new URL("../..", import.meta.url));
const SECRET = "s".repeat(40);
const OTHER_SECRET = "o".repeat(40);
const ROOT = "r".repeat(30);

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-creds-"));
  dirs.push(dir);
  return dir;
}

const saved = { rootKey: ROOT, secretKey: SECRET, workspaceId: "w", workspaceName: "default", writeKey: "tdw_x", adminApiKey: "tda_x" };
const savedText = `${JSON.stringify(saved, null, 2)}\n`;

describe("resolveSecrets (embedded database)", () => {
  it("generates and saves missing keys once, then reads them back", async () => {
    const dir = await dataDir();
    const first = await resolveSecrets(loadConfig({ TIDINGS_DATA_DIR: dir }));
    const file = await readFile(path.join(dir, "credentials.json"), "utf8");
    expect(JSON.parse(file)).toEqual({ rootKey: first.rootKey, secretKey: first.secretKey });
    const again = await resolveSecrets(loadConfig({ TIDINGS_DATA_DIR: dir }));
    expect([again.rootKey, again.secretKey]).toEqual([first.rootKey, first.secretKey]);
    expect(await readFile(path.join(dir, "credentials.json"), "utf8")).toBe(file);
  });

  it("an environment key is used for the run but never overwrites the saved one", async () => {
    const dir = await dataDir();
    await writeFile(path.join(dir, "credentials.json"), savedText);
    const config = await resolveSecrets(loadConfig({ TIDINGS_DATA_DIR: dir, TIDINGS_SECRET_KEY: OTHER_SECRET }));
    expect(config.secretKey).toBe(OTHER_SECRET);
    expect(config.rootKey).toBe(ROOT);
    expect(await readFile(path.join(dir, "credentials.json"), "utf8")).toBe(savedText);
  });

  it("a broken credentials.json stops the start with a message, and is left as it is", async () => {
    const dir = await dataDir();
    await writeFile(path.join(dir, "credentials.json"), "{not json");
    await expect(resolveSecrets(loadConfig({ TIDINGS_DATA_DIR: dir }))).rejects.toThrow(/credentials\.json is not readable JSON/);
    expect(await readFile(path.join(dir, "credentials.json"), "utf8")).toBe("{not json");
  });
});

describe("a start with DATABASE_URL", () => {
  it("creates the default workspace's keys for that database without touching the data directory's credentials.json", async () => {
    const withFile = await dataDir();
    const empty = await dataDir();
    await writeFile(path.join(withFile, "credentials.json"), savedText);
    for (const dir of [withFile, empty]) {
      const config = loadConfig({
        DATABASE_URL: await createTestDatabase(),
        TIDINGS_ROOT_KEY: ROOT,
        TIDINGS_SECRET_KEY: SECRET,
        TIDINGS_DATA_DIR: dir,
        LOG_LEVEL: "silent",
      });
      const tidings = await startTidings(config, () => {});
      await tidings.close();
      expect(tidings.created?.adminApiKey).toMatch(/^tda_/);
    }
    expect(await readFile(path.join(withFile, "credentials.json"), "utf8")).toBe(savedText);
    expect(existsSync(path.join(empty, "credentials.json"))).toBe(false);
  });
});

/** Runs the server binary to its exit (it cannot listen: the port is taken). */
async function runMain(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TIDINGS_") && k !== "DATABASE_URL"));
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: API_DIR,
    env: { ...clean, HOST: "127.0.0.1", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const [code] = (await once(child, "exit")) as [number | null];
  return { code, output };
}

describe("a first start that fails after creating keys (port in use)", () => {
  const taken = net.createServer();
  afterAll(() => new Promise<void>((r) => taken.close(() => r())));

  it("shows the keys before failing, and the next start says where they are", { timeout: 90_000 }, async () => {
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
    const port = String((taken.address() as net.AddressInfo).port);

    const dir = await dataDir();
    const first = await runMain({ TIDINGS_DATA_DIR: dir, PORT: port });
    expect(first.code, first.output).toBe(1);
    const creds = JSON.parse(await readFile(path.join(dir, "credentials.json"), "utf8"));
    expect(first.output).toContain(`admin API key: ${creds.adminApiKey}`);
    expect(first.output).toContain(`Saved to ${path.join(dir, "credentials.json")}`);
    const second = await runMain({ TIDINGS_DATA_DIR: dir, PORT: port });
    expect(second.code, second.output).toBe(1);
    expect(second.output).toContain(`keys are in ${path.join(dir, "credentials.json")}`);

    const elsewhere = await dataDir();
    const external = await runMain({
      DATABASE_URL: await createTestDatabase(),
      TIDINGS_ROOT_KEY: ROOT,
      TIDINGS_SECRET_KEY: SECRET,
      TIDINGS_DATA_DIR: elsewhere,
      PORT: port,
    });
    expect(external.code, external.output).toBe(1);
    // Saved nowhere, keys go to a terminal only: this output is a pipe, so the log says how to mint them.
    expect(external.output).not.toMatch(/admin API key: tda_|write key: tdw_/);
    expect(external.output).toMatch(
      /its keys are not printed \(stdout is not a terminal\): mint an admin key with the root key \(POST \/api\/admin\/workspaces\/[0-9a-f-]{36}\/api-keys\)/,
    );
    expect(existsSync(path.join(elsewhere, "credentials.json"))).toBe(false);

    // An init job that reads its own output asks for them.
    const asked = await runMain({
      DATABASE_URL: await createTestDatabase(),
      TIDINGS_ROOT_KEY: ROOT,
      TIDINGS_SECRET_KEY: SECRET,
      TIDINGS_DATA_DIR: elsewhere,
      TIDINGS_PRINT_KEYS: "true",
      PORT: port,
    });
    expect(asked.output).toMatch(/admin API key: tda_\S+/);
    expect(asked.output).toContain("not saved anywhere");
  });
});
