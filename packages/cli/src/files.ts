// Reads one JSON or YAML document from a file named on the command line (`-` for stdin).
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { UsageError } from "./errors.js";

export function readDataFile(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (err) {
    throw new UsageError(`${what} ${file}: ${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
  try {
    // JSON is YAML, but JSON.parse gives JSON's error messages for a .json file.
    return /\.json$/i.test(file) ? JSON.parse(text) : parse(text);
  } catch (err) {
    throw new UsageError(`${what} ${file}: cannot parse: ${(err as Error).message.split("\n")[0]}`);
  }
}

/** Parses a JSON object given inline on the command line. */
export function parseJsonOption(value: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    throw new UsageError(`${what}: invalid JSON: ${(err as Error).message}`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new UsageError(`${what}: expected a JSON object`);
  return parsed as Record<string, unknown>;
}
