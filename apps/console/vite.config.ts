// The console is built into dist/ and served by the API server at /console (apps/api/src/console).
// The SDK loads undici only when it is given no `fetch`; the console always gives the browser's.
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The budget is 250 KB gzipped for the whole app (README: the figure `vite build` prints).
    chunkSizeWarningLimit: 1000,
    rollupOptions: { external: ["undici", "zlib", "node:zlib"] },
  },
});
