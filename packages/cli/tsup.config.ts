import { defineConfig } from "tsup";

// tsup 8 hands TypeScript a `baseUrl` for the declaration build, which TypeScript 6 deprecates
// (error TS5101); acknowledging the deprecation there keeps our own tsconfig strict.
const dtsCompilerOptions = { ignoreDeprecations: "6.0" };

export default defineConfig([
  {
    entry: ["src/index.ts"],
    format: ["esm", "cjs"],
    dts: { compilerOptions: dtsCompilerOptions },
    sourcemap: true,
    target: "node20",
  },
  {
    entry: ["src/bin.ts"],
    format: ["esm"],
    sourcemap: true,
    target: "node20",
    banner: { js: "#!/usr/bin/env node" },
  },
]);
