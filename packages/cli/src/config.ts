// Profiles saved by `tidings login`: one JSON file, mode 600, under $XDG_CONFIG_HOME/tidings
// (else ~/.config/tidings). Keys are secrets, so the file and its directory are private.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { UsageError } from "./errors.js";

export interface Profile {
  host?: string;
  apiKey?: string;
  workspaceId?: string;
  writeKey?: string;
}

export interface ConfigFile {
  profiles: Record<string, Profile>;
}

export const DEFAULT_PROFILE = "default";

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "tidings", "config.json");
}

export function readConfig(file = configPath()): ConfigFile {
  if (!existsSync(file)) return { profiles: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new UsageError(`cannot read the config file ${file}: ${(err as Error).message}`);
  }
  const profiles = (parsed as ConfigFile | null)?.profiles;
  if (!profiles || typeof profiles !== "object") throw new UsageError(`the config file ${file} has no "profiles" object`);
  return { profiles };
}

/** Writes atomically (temp file + rename), mode 600 in a mode-700 directory. */
export function writeConfig(config: ConfigFile, file = configPath()): void {
  const dir = path.dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

export function saveProfile(name: string, profile: Profile, file = configPath()): void {
  const config = readConfig(file);
  const merged = { ...config.profiles[name] };
  for (const [k, v] of Object.entries(profile)) if (v !== undefined) merged[k as keyof Profile] = v;
  config.profiles[name] = merged;
  writeConfig(config, file);
}

/** Removes a profile; false when there was none. */
export function removeProfile(name: string, file = configPath()): boolean {
  const config = readConfig(file);
  if (!config.profiles[name]) return false;
  delete config.profiles[name];
  writeConfig(config, file);
  return true;
}
