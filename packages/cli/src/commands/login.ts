// `tidings login` / `tidings logout`: save or remove a connection profile (host, admin API key,
// workspace, write key) in the config file, mode 600.
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { Api } from "../api.js";
import { configPath, DEFAULT_PROFILE, type Profile, readConfig, removeProfile, saveProfile } from "../config.js";
import { action, DEFAULT_HOST, isUuid } from "../context.js";
import { UsageError } from "../errors.js";

/** Asks on the terminal; a hidden answer (a key) is not echoed. */
async function ask(question: string, hidden = false): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  if (hidden) {
    const internal = rl as unknown as { _writeToOutput: (s: string) => void; output: NodeJS.WritableStream };
    internal._writeToOutput = (s: string) => {
      if (s.startsWith(question) || s === "\r\n" || s === "\n") internal.output.write(s);
    };
  }
  try {
    return await new Promise<string>((resolve) => rl.question(question, (answer) => resolve(answer.trim())));
  } finally {
    rl.close();
  }
}

export function registerLoginCommands(program: Command) {
  program
    .command("login")
    .description("Save a connection profile (host, admin API key, workspace, write key) for later commands")
    .option("--no-verify", "save without checking the key against the server")
    .addHelpText(
      "after",
      `
Values come from --host, --api-key, --workspace and --write-key (or TIDINGS_HOST,
TIDINGS_API_KEY, TIDINGS_WORKSPACE_ID, TIDINGS_WRITE_KEY); on a terminal, a missing host or
API key is asked for. Fields not given keep their saved value. The file is
$XDG_CONFIG_HOME/tidings/config.json (else ~/.config/tidings/config.json), mode 600;
--profile NAME saves under another name (default "${DEFAULT_PROFILE}").`,
    )
    .action(
      action(async (ctx, opts: { verify: boolean }) => {
        const name = ctx.opts.profile ?? DEFAULT_PROFILE;
        const saved: Profile = readConfig().profiles[name] ?? {};
        const interactive = process.stdin.isTTY === true && process.stderr.isTTY === true;
        let host = ctx.opts.host ?? saved.host;
        let apiKey = ctx.opts.apiKey ?? saved.apiKey;
        if (!host && interactive) host = (await ask(`Tidings host [${DEFAULT_HOST}]: `)) || DEFAULT_HOST;
        host ??= DEFAULT_HOST;
        if (!apiKey && interactive) apiKey = await ask("Admin API key: ", true);
        if (!apiKey) throw new UsageError("no admin API key: pass --api-key or set TIDINGS_API_KEY");
        let workspaceId = ctx.opts.workspace ?? saved.workspaceId;
        if (workspaceId !== undefined && !isUuid(workspaceId))
          throw new UsageError(`--workspace must be a workspace id (a UUID), got "${workspaceId}"`);
        try {
          host = new URL(host).href.replace(/\/$/, "");
        } catch {
          throw new UsageError(`--host must be a URL such as ${DEFAULT_HOST}, got "${host}"`);
        }
        if (opts.verify) {
          // Listing the key's own workspace's keys proves the key works and names its workspace.
          const api = new Api({ host, apiKey, workspaceId });
          const keys = await api.call("apiKeys.list", {});
          workspaceId ??= keys.items[0]?.workspaceId;
        }
        const profile: Profile = { host, apiKey, workspaceId, writeKey: ctx.opts.writeKey ?? saved.writeKey };
        saveProfile(name, profile);
        if (ctx.json)
          return ctx.out.data({
            profile: name,
            file: configPath(),
            host,
            workspaceId: workspaceId ?? null,
            writeKey: Boolean(profile.writeKey),
          });
        ctx.out.line(`Saved profile "${name}" to ${configPath()}${workspaceId ? ` (workspace ${workspaceId})` : ""}`);
      }),
    );

  program
    .command("logout")
    .description('Remove a saved profile (--profile NAME, default "default")')
    .action(
      action(async (ctx) => {
        const name = ctx.opts.profile ?? DEFAULT_PROFILE;
        const removed = removeProfile(name);
        if (ctx.json) return ctx.out.data({ profile: name, removed });
        ctx.out.line(removed ? `Removed profile "${name}" from ${configPath()}` : `No profile "${name}" in ${configPath()}`);
      }),
    );
}
