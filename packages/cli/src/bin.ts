import { reportError } from "./context.js";
import { buildProgram } from "./program.js";

// A reader that goes away (`tidings openapi | head -1`) is not an error: stop quietly.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });
}

/** Resolves once everything written to `stream` so far has been handed to the OS. */
const flushed = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => stream.write("", () => resolve()));

try {
  await buildProgram().parseAsync(process.argv);
} catch (err) {
  reportError(err);
}
// Exit explicitly (idle keep-alive connections would hold the process open for seconds), but
// only once the output is out: a pipe may still hold a large document.
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(process.exitCode ?? 0);
