// `tidings openapi`: prints the OpenAPI document of this CLI's API version (no server needed).
import { writeFileSync } from "node:fs";
import { buildOpenApiDocument } from "@tidings/schema/openapi";
import type { Command } from "commander";
import { action } from "../context.js";
import { UsageError } from "../errors.js";

export function registerOpenApiCommand(program: Command) {
  program
    .command("openapi")
    .description("Print the OpenAPI 3.1 document of the Tidings API (as built into this CLI)")
    .option("-o, --output <file>", "write to a file instead of standard output")
    .action(
      action((_ctx, opts: { output?: string }) => {
        const text = `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;
        if (!opts.output) {
          process.stdout.write(text);
          return;
        }
        try {
          writeFileSync(opts.output, text);
        } catch (err) {
          const e = err as NodeJS.ErrnoException;
          throw new UsageError(
            `cannot write ${opts.output}: ${e.code === "ENOENT" ? "no such directory" : e.code === "EISDIR" ? "is a directory" : e.code === "EACCES" ? "permission denied" : e.message}`,
          );
        }
      }),
    );
}
