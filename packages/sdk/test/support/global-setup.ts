// One real server for the whole run (its embedded PostgreSQL takes seconds to start); each test
// file makes its own workspaces on it with the root key.
import type { TestProject } from "vitest/node";
import { ensureBuilt, startServer } from "./server.js";

declare module "vitest" {
  export interface ProvidedContext {
    server: { url: string; rootKey: string; workspaceId: string; writeKey: string; adminKey: string };
  }
}

export default async function setup(project: TestProject) {
  ensureBuilt();
  const server = await startServer();
  const { stop, ...info } = server;
  project.provide("server", info);
  return stop;
}
