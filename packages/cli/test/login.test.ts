// Connection settings: `tidings login` profiles (mode 600 under XDG_CONFIG_HOME or ~/.config),
// --profile, and the order flags → environment → profile.
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, runCli, tempConfigHome, tempDir, type Workspace } from "./support/cli.js";

describe("tidings login and profiles", () => {
  let ws: Workspace;
  let other: Workspace;

  beforeAll(async () => {
    ws = await newWorkspace("login");
    other = await newWorkspace("login-other");
  });

  it("saves host, API key, workspace and write key in $XDG_CONFIG_HOME/tidings/config.json, mode 600", async () => {
    const xdg = tempConfigHome();
    const res = await runCli(["login", "--host", ws.host, "--api-key", ws.apiKey, "--write-key", ws.writeKey], {
      env: { XDG_CONFIG_HOME: xdg },
    });
    expect(res.status, res.stderr).toBe(0);
    const file = path.join(xdg, "tidings", "config.json");
    expect(res.stdout).toBe(`Saved profile "default" to ${file} (workspace ${ws.workspaceId})\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      profiles: { default: { host: ws.host, apiKey: ws.apiKey, workspaceId: ws.workspaceId, writeKey: ws.writeKey } },
    });

    // Later commands need no flags: the profile supplies the host and both keys.
    const list = await runCli(["segments", "list", "--json"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(list.status, list.stderr).toBe(0);
    const send = await runCli(["events", "send", "--user-id", "p1", "--event", "Profiled"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(send.status, send.stderr).toBe(0);
  });

  it("falls back to ~/.config/tidings/config.json without XDG_CONFIG_HOME", async () => {
    const home = tempDir("home");
    const res = await runCli(["login", "--host", ws.host, "--api-key", ws.apiKey], { env: { HOME: home, XDG_CONFIG_HOME: "" } });
    expect(res.status, res.stderr).toBe(0);
    expect(existsSync(path.join(home, ".config", "tidings", "config.json"))).toBe(true);
  });

  it("keeps named profiles apart (--profile, TIDINGS_PROFILE); flags and environment override the profile", async () => {
    const xdg = tempConfigHome();
    const env = { XDG_CONFIG_HOME: xdg };
    expect((await runCli(["login", "--host", ws.host, "--api-key", ws.apiKey], { env })).status).toBe(0);
    expect((await runCli(["login", "--profile", "other", "--host", other.host, "--api-key", other.apiKey], { env })).status).toBe(0);

    // Which workspace a command acts on shows in the templates it lists: one exists only in "other".
    const list = async (args: string[], extraEnv: Record<string, string> = {}) =>
      runCli(["templates", "list", "--json", ...args], { env: { ...env, ...extraEnv } });
    const markFile = path.join(tempDir("mark"), "t.yaml");
    writeFileSync(markFile, "kind: Template\nname: Only in other\ndefinition: { type: Sms, body: hi }\n");
    const put = await runCli(["apply", "-f", markFile, "--profile", "other"], { env });
    expect(put.status, put.stderr).toBe(0);

    const names = (res: { stdout: string }) => JSON.parse(res.stdout).items.map((t: { name: string }) => t.name);
    expect(names(await list([]))).toEqual([]);
    expect(names(await list(["--profile", "other"]))).toEqual(["Only in other"]);
    expect(names(await list([], { TIDINGS_PROFILE: "other" }))).toEqual(["Only in other"]);
    // The environment's key beats the profile's; a flag beats both.
    expect(names(await list([], { TIDINGS_API_KEY: other.apiKey }))).toEqual(["Only in other"]);
    expect(names(await list(["--api-key", ws.apiKey], { TIDINGS_API_KEY: other.apiKey }))).toEqual([]);

    const wrong = await list(["--api-key", "tda_wrong"]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toMatch(/UNAUTHORIZED, HTTP 401/);
    expect(wrong.stderr).toMatch(/request id: \S+/);
  });

  it("exits 2 for a profile that does not exist or a login without a key; a key the server refuses is not saved", async () => {
    const xdg = tempConfigHome();
    const missing = await runCli(["segments", "list", "--profile", "nope"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/no profile "nope" in .*config\.json/);

    const noKey = await runCli(["login", "--host", ws.host], { env: { XDG_CONFIG_HOME: xdg } });
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/no admin API key/);

    const refused = await runCli(["login", "--host", ws.host, "--api-key", "tda_not_a_key"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/UNAUTHORIZED/);
    expect(existsSync(path.join(xdg, "tidings", "config.json"))).toBe(false);
  });

  it("logout removes a profile", async () => {
    const xdg = tempConfigHome();
    const env = { XDG_CONFIG_HOME: xdg };
    expect((await runCli(["login", "--profile", "tmp", "--host", ws.host, "--api-key", ws.apiKey], { env })).status).toBe(0);
    const out = await runCli(["logout", "--profile", "tmp"], { env });
    expect(out.stdout).toMatch(/^Removed profile "tmp"/);
    expect(JSON.parse(readFileSync(path.join(xdg, "tidings", "config.json"), "utf8"))).toEqual({ profiles: {} });
  });

  it("creates a workspace with the root key and saves it as a profile", async () => {
    const xdg = tempConfigHome();
    const name = `saved-${Date.now()}`;
    const res = await runCli(["workspaces", "create", name, "--save-profile", "fresh", "--root-key", ws.rootKey, "--host", ws.host], {
      env: { XDG_CONFIG_HOME: xdg },
    });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/write key: {5}tdw_\S+\n {2}admin API key: tda_\S+/);
    const list = await runCli(["segments", "list", "--profile", "fresh"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(list.status, list.stderr).toBe(0);

    const workspaces = await runCli(["workspaces", "list"], { env: { TIDINGS_HOST: ws.host, TIDINGS_ROOT_KEY: ws.rootKey } });
    expect(workspaces.stdout).toMatch(new RegExp(`^${name}\\s+[0-9a-f-]{36}\\s+\\d{4}-`, "m"));
    const noRoot = await runCli(["workspaces", "list"], { env: { TIDINGS_HOST: ws.host } });
    expect(noRoot.status).toBe(2);
    expect(noRoot.stderr).toMatch(/no root key: pass --root-key or set TIDINGS_ROOT_KEY/);
  });
});
