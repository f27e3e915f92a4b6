// The render threads' entry when the server runs from its TypeScript sources (tests, `pnpm dev`):
// a worker thread does not inherit the main thread's loader, so tsx is registered here first.
import { register } from "tsx/esm/api";

register();
const worker = await import("./render-worker.ts");
export const { render, preview, check } = worker;
