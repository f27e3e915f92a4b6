// The CLI without a server: help, version, usage errors, the OpenAPI document and closed pipes.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import schemaPackageJson from "@tidings/schema/package.json" with { type: "json" };
import { describe, expect, it } from "vitest";
import packageJson from "../package.json" with { type: "json" };
import { bin, runCli, tempDir } from "./support/cli.js";

describe("tidings", () => {
  it("prints the OpenAPI document", async () => {
    const res = await runCli(["openapi"]);
    expect(res.status).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toContain("/api/public/apps/batch");
  });

  it("prints its own version, the one in its package.json", async () => {
    const res = await runCli(["--version"]);
    expect(res.status).toBe(0);
    expect(res.stdout.trim()).toBe(packageJson.version);
  });

  it("prints the document of the @tidings/schema it was built with", async () => {
    const doc = JSON.parse((await runCli(["openapi"])).stdout);
    expect(doc.info.version).toBe(schemaPackageJson.version);
    expect(doc.paths["/api/admin/segments"].put.operationId).toBe("segments.upsert");
  });

  it("writes the document to a file with -o, and a bad path is a one-line error", async () => {
    const dir = tempDir("openapi");
    const ok = await runCli(["openapi", "-o", path.join(dir, "openapi.json")]);
    expect(ok.status).toBe(0);
    expect(JSON.parse(readFileSync(path.join(dir, "openapi.json"), "utf8")).openapi).toBe("3.1.0");
    const bad = await runCli(["openapi", "-o", path.join(dir, "missing", "openapi.json")]);
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^error: cannot write .*missing.*: no such directory$/)]);
  });

  it("ends quietly when its reader goes away (`openapi | head -1`)", () => {
    const res = spawnSync("bash", ["-o", "pipefail", "-c", `"${process.execPath}" "${bin}" openapi | head -1`], { encoding: "utf8" });
    expect(res.stdout).toBe("{\n");
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
  });

  it("exits 2 with a message on a usage error: unknown command, unknown option, bad value, missing option", async () => {
    const unknown = await runCli(["no-such-command"]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command/);

    const option = await runCli(["segments", "list", "--no-such-option"]);
    expect(option.status).toBe(2);
    expect(option.stderr).toMatch(/unknown option '--no-such-option'/);

    const value = await runCli(["segments", "list", "--limit", "0"]);
    expect(value.status).toBe(2);
    expect(value.stderr).toMatch(/--limit.*expected a whole number/);

    const missing = await runCli(["apply"]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/required option '-f, --file <path...>' not specified/);

    const badHost = await runCli(["segments", "list", "--host", "not a url", "--api-key", "k"]);
    expect(badHost.status).toBe(2);
    expect(badHost.stderr).toMatch(/--host must be a URL/);
  });

  it("exits 2 without sending anything when no key is configured", async () => {
    const res = await runCli(["segments", "list", "--host", "http://127.0.0.1:9"]);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/no admin API key: pass --api-key, set TIDINGS_API_KEY or run `tidings login`/);
  });

  it("exits 1 without a stack trace when the server cannot be reached", async () => {
    const res = await runCli(["segments", "list", "--host", "http://127.0.0.1:9", "--api-key", "k"]);
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^error: cannot reach http:\/\/127\.0\.0\.1:9/);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it("describes every command group in --help", async () => {
    const res = await runCli(["--help"]);
    expect(res.status).toBe(0);
    for (const group of [
      "login",
      "apply",
      "segments",
      "templates",
      "subscription-groups",
      "journeys",
      "broadcasts",
      "users",
      "events",
      "workspaces",
      "openapi",
    ]) {
      expect(res.stdout).toContain(`  ${group}`);
    }
  });
});
