// Shared by the benchmarks: waiting for a server process to print what it must.
import type { ChildProcess } from "node:child_process";

/** Resolves with the first match of `re` in the child's output (stdout and stderr together). */
export function waitForLine(child: ChildProcess, re: RegExp): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    let buf = "";
    const on = (chunk: Buffer) => {
      buf += chunk.toString();
      const m = buf.match(re);
      if (m) resolve(m);
    };
    child.stdout?.on("data", on);
    child.stderr?.on("data", on);
    child.on("exit", (code) => reject(new Error(`process exited (${code}) before ready:\n${buf}`)));
  });
}
