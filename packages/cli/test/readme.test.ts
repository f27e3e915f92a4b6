// Runs the examples of README.md against the test server: every ```sh block (not marked
// `no-run`) in order, in one directory where each block with `file=PATH` was written first, with
// `tidings` on PATH as the built binary. `http://127.0.0.1:3000` stands for the server's address.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it } from "vitest";
import { bin, tempConfigHome, tempDir } from "./support/cli.js";

const readme = readFileSync(fileURLToPath(new URL("../README.md", import.meta.url)), "utf8");

interface Block {
  lang: string;
  info: string;
  body: string;
}

const blocks: Block[] = [...readme.matchAll(/^```(\w*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
  lang: m[1]!,
  info: m[2]!.trim(),
  body: m[3]!,
}));
const files = blocks.filter((b) => /\bfile=\S+/.test(b.info));
const scripts = blocks.filter((b) => b.lang === "sh" && !/\bno-run\b/.test(b.info));

describe("README.md examples", () => {
  it("has examples to run and files they use", () => {
    expect(scripts.length).toBeGreaterThanOrEqual(6);
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  it("run, in order, each exiting 0", () => {
    const server = inject("server");
    const work = tempDir("readme");
    for (const f of files) {
      const target = path.join(work, /\bfile=(\S+)/.exec(f.info)![1]!);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, f.body);
    }
    const binDir = path.join(work, ".bin");
    mkdirSync(binDir);
    writeFileSync(path.join(binDir, "tidings"), `#!/bin/sh\nexec "${process.execPath}" "${bin}" "$@"\n`);
    chmodSync(path.join(binDir, "tidings"), 0o755);
    const env = {
      PATH: `${binDir}:${process.env.PATH}`,
      HOME: work,
      XDG_CONFIG_HOME: tempConfigHome(),
      TIDINGS_HOST: server.host,
      TIDINGS_ROOT_KEY: server.rootKey,
    };
    for (const script of scripts) {
      const body = script.body.replaceAll("http://127.0.0.1:3000", server.host);
      const res = spawnSync("bash", ["-euo", "pipefail", "-c", body], { cwd: work, env, encoding: "utf8", timeout: 60_000 });
      expect(res.status, `${body}\nstdout:\n${res.stdout}\nstderr:\n${res.stderr}`).toBe(0);
      expect(res.stderr, body).not.toMatch(/^error:/m);
    }
  }, 180_000);
});
