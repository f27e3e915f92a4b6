// The wrapper every command runs in: global options → connection (flags, then environment, then
// the saved profile), an API client, output in the chosen mode, and errors mapped to exit codes.
import { type Command, InvalidArgumentError, Option } from "commander";
import { Api, type Connection } from "./api.js";
import { configPath, DEFAULT_PROFILE, readConfig } from "./config.js";
import { describeError, UsageError } from "./errors.js";
import { Output } from "./output.js";

export const DEFAULT_HOST = "http://127.0.0.1:3000";

export interface GlobalOptions {
  host?: string;
  apiKey?: string;
  workspace?: string;
  writeKey?: string;
  rootKey?: string;
  profile?: string;
  json?: boolean;
}

/** The options every command accepts (before or after the command name). */
export function addGlobalOptions(program: Command): Command {
  return program
    .addOption(new Option("--host <url>", `server URL (default: the profile's, else ${DEFAULT_HOST})`).env("TIDINGS_HOST"))
    .addOption(new Option("--api-key <key>", "admin API key").env("TIDINGS_API_KEY"))
    .addOption(new Option("--workspace <id>", "workspace id (default: the API key's workspace)").env("TIDINGS_WORKSPACE_ID"))
    .addOption(new Option("--write-key <key>", "write key, for `events send` and `events import`").env("TIDINGS_WRITE_KEY"))
    .addOption(new Option("--profile <name>", `profile saved by \`tidings login\` (default: "${DEFAULT_PROFILE}")`).env("TIDINGS_PROFILE"))
    .option("--json", "print JSON for scripts instead of tables");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

/**
 * Resolves the connection: each field from its flag, else its environment variable, else the
 * profile (`--profile`, TIDINGS_PROFILE, else "default").
 */
export function resolveConnection(opts: GlobalOptions): Connection & { profile: string } {
  const profileName = opts.profile ?? DEFAULT_PROFILE;
  const profile = readConfig().profiles[profileName];
  if (opts.profile !== undefined && !profile) {
    throw new UsageError(`no profile "${profileName}" in ${configPath()}`, [`save one with: tidings login --profile ${profileName}`]);
  }
  const host = opts.host ?? profile?.host ?? DEFAULT_HOST;
  let url: URL;
  try {
    url = new URL(host);
  } catch {
    throw new UsageError(`--host must be a URL such as ${DEFAULT_HOST}, got "${host}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--host must be an http(s) URL, got "${host}"`);
  // A workspace saved in a profile belongs with the profile's key: a key given by flag or
  // environment acts on its own workspace unless --workspace / TIDINGS_WORKSPACE_ID says otherwise.
  const workspaceId = opts.workspace ?? (opts.apiKey === undefined ? profile?.workspaceId : undefined);
  if (workspaceId !== undefined && !isUuid(workspaceId))
    throw new UsageError(`--workspace must be a workspace id (a UUID), got "${workspaceId}"`);
  return {
    profile: profileName,
    host: url.href.replace(/\/$/, ""),
    apiKey: opts.apiKey ?? profile?.apiKey,
    workspaceId,
    writeKey: opts.writeKey ?? profile?.writeKey,
    rootKey: opts.rootKey,
  };
}

export class Ctx {
  readonly out: Output;
  private client?: Api;
  private conn?: Connection & { profile: string };

  constructor(readonly opts: GlobalOptions) {
    this.out = new Output(opts.json === true);
  }

  get json(): boolean {
    return this.opts.json === true;
  }

  get connection(): Connection & { profile: string } {
    this.conn ??= resolveConnection(this.opts);
    return this.conn;
  }

  get api(): Api {
    this.client ??= new Api(this.connection);
    return this.client;
  }
}

/**
 * Wraps a command's action: builds its context from the options of the command and its parents,
 * and turns any error into a message on stderr and an exit code (2 usage, 1 API or other).
 */
export function action<A extends unknown[]>(fn: (ctx: Ctx, ...args: A) => Promise<void> | void) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args[args.length - 1] as Command;
    try {
      await fn(new Ctx(command.optsWithGlobals<GlobalOptions>()), ...(args.slice(0, -1) as A));
    } catch (err) {
      reportError(err);
    }
  };
}

export function reportError(err: unknown): void {
  const { lines, exitCode } = describeError(err);
  process.stderr.write(`${lines.join("\n")}\n`);
  if (process.env.TIDINGS_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exitCode = exitCode;
}

/** Commander option parser for a positive integer (a bad value is a usage error, exit 2). */
export const positiveInt =
  (max = Number.MAX_SAFE_INTEGER) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`);
    return n;
  };
