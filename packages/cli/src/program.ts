// The `tidings` command tree. Each command lives in its own module under commands/.
import { Command } from "commander";
import packageJson from "../package.json" with { type: "json" };
import { registerOpenApiCommand } from "./commands/openapi.js";

/** This CLI's version, from its package.json (inlined by the build), so a release bump moves it. */
export const VERSION: string = packageJson.version;

export function buildProgram(): Command {
  const program = new Command()
    .name("tidings")
    .description("Administer a Tidings server: segments, templates, broadcasts, journeys and users.")
    .version(VERSION)
    .showHelpAfterError()
    // Usage errors exit 2 (API errors exit 1), per the CLI contract.
    .exitOverride((err) => {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version") process.exit(0);
      process.exit(2);
    });
  registerOpenApiCommand(program);
  return program;
}
