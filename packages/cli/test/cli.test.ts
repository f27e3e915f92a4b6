// The CLI is tested as a subprocess of its built binary.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import schemaPackageJson from "@tidings/schema/package.json" with { type: "json" };
import { describe, expect, it } from "vitest";
import packageJson from "../package.json" with { type: "json" };

const bin = fileURLToPath(new URL("../dist/bin.js", import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [bin, ...args], { encoding: "utf8" });

describe("tidings", () => {
  it("prints the OpenAPI document", () => {
    const res = run("openapi");
    expect(res.status).toBe(0);
    const doc = JSON.parse(res.stdout);
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toContain("/api/public/apps/batch");
  });

  it("prints its own version, the one in its package.json", () => {
    const res = run("--version");
    expect(res.status).toBe(0);
    expect(res.stdout.trim()).toBe(packageJson.version);
  });

  it("prints the document of the @tidings/schema it was built with", () => {
    const doc = JSON.parse(run("openapi").stdout);
    expect(doc.info.version).toBe(schemaPackageJson.version);
    expect(doc.paths["/api/admin/segments"].put.operationId).toBe("segments.upsert");
  });

  it("exits 2 with a message on a usage error", () => {
    const res = run("no-such-command");
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/unknown command/);
  });

  it("describes itself in --help", () => {
    const res = run("--help");
    expect(res.status).toBe(0);
    expect(res.stdout).toContain("openapi");
  });
});
