// `tidings openapi`: prints the OpenAPI document of this CLI's API version (no server needed).
import { writeFileSync } from "node:fs";
import { buildOpenApiDocument } from "@tidings/schema/openapi";
import type { Command } from "commander";

export function registerOpenApiCommand(program: Command) {
  program
    .command("openapi")
    .description("Print the OpenAPI 3.1 document of the Tidings API (as built into this CLI)")
    .option("-o, --output <file>", "write to a file instead of standard output")
    .action((opts: { output?: string }) => {
      const text = `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
      if (opts.output) writeFileSync(opts.output, text);
      else process.stdout.write(text);
    });
}
