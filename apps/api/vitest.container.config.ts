import { defineConfig } from "vitest/config";

// `pnpm test:container`: the image built and run with podman (test-container/), one file, in order.
export default defineConfig({
  test: {
    include: ["test-container/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 1_500_000,
  },
});
