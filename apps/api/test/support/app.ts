// Per-file test server: a fresh database cloned from the migrated template, the real app
// listening on 127.0.0.1, and a workspace with its keys.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { loadConfig, type ResolvedConfig } from "../../src/config.ts";
import { type BuildOptions, buildApp } from "../../src/app/http.ts";
import type { System as AppContext } from "../../src/app/system.ts";
import { createSystem as createContext, type SystemOptions as ContextOptions } from "../../src/app/system.ts";

export const ROOT_KEY = "test-root-key-0123456789abcdef";

export interface TestWorkspace {
  id: string;
  writeKey: string;
  adminKey: string;
}

export interface TestApp {
  url: string;
  ctx: AppContext;
  databaseUrl: string;
  workspace: TestWorkspace;
  newWorkspace(name?: string): Promise<TestWorkspace>;
  close(): Promise<void>;
}

let counter = 0;

/** A database of its own for one test file, cloned from the migrated template. */
export async function createTestDatabase(): Promise<string> {
  return createDatabase(`TEMPLATE ${inject("templateDb")}`);
}

/** A new database of the test cluster, created with `options` (CREATE DATABASE's clauses): its URL. */
export async function createDatabase(options: string): Promise<string> {
  const adminUrl = inject("adminUrl");
  const name = `tidings_test_${process.pid}_${Date.now()}_${counter++}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} ${options}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function createTestApp(
  overrides: Partial<ResolvedConfig> & ContextOptions & Pick<BuildOptions, "logStream"> = {},
): Promise<TestApp> {
  const { clock, segmentsHeavyIngestion, retentionSlices, ingestMaxQueuedEvents, logStream, ...configOverrides } = overrides;
  // A second app on another's database (`databaseUrl` given) stands for another replica.
  const databaseUrl = configOverrides.databaseUrl ?? (await createTestDatabase());
  const config: ResolvedConfig = {
    ...loadConfig({ LOG_LEVEL: "silent", TIDINGS_KEY_CACHE_SECONDS: "0" }),
    databaseUrl,
    rootKey: ROOT_KEY,
    secretKey: "test-secret-key-0123456789abcdef0123456789",
    // Tests share two loaded cores: the overload guard would answer 503s that test nothing.
    maxEventLoopDelayMs: 0,
    ...configOverrides,
  };
  const ctx = createContext(config, databaseUrl, {
    ...(clock ? { clock } : {}),
    ...(segmentsHeavyIngestion ? { segmentsHeavyIngestion } : {}),
    ...(retentionSlices ? { retentionSlices } : {}),
    ...(ingestMaxQueuedEvents ? { ingestMaxQueuedEvents } : {}),
  });
  const app = await buildApp(ctx, logStream ? { logStream } : {});
  await ctx.jobs.start();
  const url = await app.listen({ port: 0, host: "127.0.0.1" });
  const newWorkspace = async (name = `ws-${randomUUID()}`) => {
    const created = await createWorkspace(ctx.db.prisma, name);
    return { id: created.workspace.id, writeKey: created.writeKey, adminKey: created.adminApiKey };
  };
  const workspace = await newWorkspace();
  return {
    url,
    ctx,
    databaseUrl,
    workspace,
    newWorkspace,
    async close() {
      await app.close();
      await ctx.close();
    },
  };
}
