import { defineConfig } from "tsup";

// tsup 8 hands TypeScript a `baseUrl` for the declaration build, which TypeScript 6 deprecates
// (error TS5101); acknowledging the deprecation there keeps our own tsconfig strict.
const dtsCompilerOptions = { ignoreDeprecations: "6.0" };

export default defineConfig({
  // `@tidings/schema` (wire types and route contracts) and `@tidings/schema/openapi` (the
  // document generator); split, so both entries share one copy of the schemas in ESM and CJS.
  entry: { index: "src/index.ts", openapi: "src/openapi/index.ts" },
  splitting: true,
  format: ["esm", "cjs"],
  dts: { compilerOptions: dtsCompilerOptions },
  sourcemap: true,
  target: "node20",
});
