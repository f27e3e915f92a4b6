import { readFileSync } from "node:fs";
import { defineConfig } from "tsup";

const { version } = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as { version: string };

// tsup 8 hands TypeScript a `baseUrl` for the declaration build, which TypeScript 6 deprecates
// (error TS5101); acknowledging the deprecation there keeps our own tsconfig strict.
const dtsCompilerOptions = { ignoreDeprecations: "6.0" };

export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  dts: { compilerOptions: dtsCompilerOptions },
  sourcemap: true,
  target: "node20",
  define: { __SDK_VERSION__: JSON.stringify(version) },
});
