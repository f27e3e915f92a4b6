// The `tidings` command tree. Each command group lives in its own module under commands/, over the
// shared wrapper in context.ts (connection, output, errors → exit codes).
import { Command } from "commander";
import { registerApplyCommand } from "./commands/apply.js";
import { registerBroadcastCommands } from "./commands/broadcasts.js";
import { registerDeliveryCommands } from "./commands/deliveries.js";
import { registerEventCommands } from "./commands/events.js";
import { registerJourneyCommands } from "./commands/journeys.js";
import { registerLoginCommands } from "./commands/login.js";
import { registerOpenApiCommand } from "./commands/openapi.js";
import { registerPolicyCommands } from "./commands/policies.js";
import { registerResourceCommands } from "./commands/resources.js";
import { registerDeliveryTail, registerEventTail } from "./commands/tail.js";
import { registerTemplateCommands } from "./commands/templates.js";
import { registerUserCommands } from "./commands/users.js";
import { registerWorkspaceCommands } from "./commands/workspaces.js";
import { addGlobalOptions } from "./context.js";
import { kindByName } from "./resources.js";
import { VERSION } from "./version.js";

export { VERSION };

/** A command group registered above, to add a subcommand kept in its own module. */
const group = (program: Command, name: string): Command => {
  const found = program.commands.find((c) => c.name() === name);
  if (!found) throw new Error(`no command group ${name}`);
  return found;
};

export function buildProgram(): Command {
  const program = new Command()
    .name("tidings")
    .description("Administer a Tidings server: segments, templates, broadcasts, journeys, users and events.")
    .version(VERSION)
    .showHelpAfterError("(add --help for usage)")
    // Usage errors exit 2 (API errors exit 1), per the CLI contract. Set before the commands are
    // added, so every subcommand inherits it.
    .exitOverride((err) => {
      if (err.code === "commander.helpDisplayed" || err.code === "commander.version" || err.code === "commander.help") process.exit(0);
      process.exit(2);
    })
    .addHelpText(
      "after",
      `
Connection: --host, --api-key, --workspace, --write-key, else TIDINGS_HOST, TIDINGS_API_KEY,
TIDINGS_WORKSPACE_ID, TIDINGS_WRITE_KEY, else the profile saved by \`tidings login\`.
Exit codes: 0 success, 1 API error (the message names the field and the request id), 2 usage error,
3 a broadcast followed with --wait completed but some message failed or none was sent.`,
    );
  addGlobalOptions(program);
  registerLoginCommands(program);
  registerApplyCommand(program);
  registerResourceCommands(program, kindByName.get("Segment")!);
  registerTemplateCommands(registerResourceCommands(program, kindByName.get("Template")!), kindByName.get("Template")!);
  registerResourceCommands(program, kindByName.get("SubscriptionGroup")!);
  registerJourneyCommands(program);
  registerBroadcastCommands(program);
  registerPolicyCommands(program);
  registerDeliveryCommands(program);
  registerDeliveryTail(group(program, "deliveries"));
  registerUserCommands(program);
  registerEventCommands(program);
  registerEventTail(group(program, "events"));
  registerWorkspaceCommands(program);
  registerOpenApiCommand(program);
  return program;
}
