import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const { version } = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as { version: string };

export default defineConfig({
  define: { __SDK_VERSION__: JSON.stringify(version) },
  resolve: {
    // The README's examples import the package by name; in tests that is the source.
    alias: [{ find: /^@tidings\/sdk$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) }],
  },
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
