// The running server of this test run, and a fresh workspace on it for each caller.
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { TidingsAdmin } from "../../src/index.js";

export const server = () => inject("server");

export interface Workspace {
  id: string;
  writeKey: string;
  adminKey: string;
  admin: TidingsAdmin;
}

/** A new workspace (created through the SDK with the root key) and an admin client for it. */
export async function newWorkspace(): Promise<Workspace> {
  const { url, rootKey } = server();
  const root = new TidingsAdmin({ apiKey: rootKey, host: url });
  const created = await root.workspaces.create({ name: `sdk-${randomUUID()}` });
  return {
    id: created.workspace.id,
    writeKey: created.writeKey,
    adminKey: created.adminApiKey,
    admin: new TidingsAdmin({ apiKey: created.adminApiKey, host: url }),
  };
}
