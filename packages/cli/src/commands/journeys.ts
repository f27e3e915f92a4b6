// `tidings journeys list|get|delete|start|pause`: start and pause PUT the journey with its new status.
import type { Command } from "commander";
import { action } from "../context.js";
import { kindByName, resolveResource, upsertResource } from "../resources.js";
import { registerResourceCommands } from "./resources.js";

const journeys = kindByName.get("Journey")!;

export function registerJourneyCommands(program: Command) {
  const group = registerResourceCommands(program, journeys);
  const transition = (name: string, status: "Running" | "Paused", description: string) =>
    group
      .command(name)
      .description(description)
      .argument("<id-or-name>", "the journey's id or name")
      .action(
        action(async (ctx, ref: string) => {
          const journey = await resolveResource(ctx.api, journeys, ref);
          const before = journey.status;
          const saved = await upsertResource(ctx.api, journeys, { id: journey.id, name: journey.name, status });
          if (ctx.json) return ctx.out.data(saved);
          ctx.out.line(
            before === saved.status
              ? `Journey "${saved.name}" was already ${saved.status}`
              : `Journey "${saved.name}": ${before} → ${saved.status}`,
          );
        }),
      );
  transition("start", "Running", "Start a journey (status Running): users entering its segment or sending its event start runs");
  transition("pause", "Paused", "Pause a running journey (status Paused): no new runs, runs in progress wait");
}
