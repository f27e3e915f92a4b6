// `pnpm tidings …` from a clone: runs the built CLI, or says in one line how to build it (instead
// of Node's `Cannot find module` stack when packages/*/dist is not there yet).
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = new URL("../", import.meta.url);
// The CLI and the two packages it loads at run time.
const built = ["packages/cli/dist/bin.js", "packages/sdk/dist/index.js", "packages/schema/dist/index.js"].map((p) =>
  fileURLToPath(new URL(p, root)),
);

if (!built.every((file) => existsSync(file))) {
  process.stderr.write("tidings: the CLI is not built in this clone yet: run `pnpm build` first, then `pnpm -s tidings …`\n");
  process.exit(2);
}
// pnpm prints the script's command line (on start, and again when it fails, even with -s): a key
// given as a flag ends up in the scrollback and CI logs.
const keyFlag = process.argv.slice(2).find((a) => /^--(api|write|root)-key(=|$)/.test(a));
if (keyFlag && process.env.npm_lifecycle_event === "tidings") {
  const flag = keyFlag.split("=")[0];
  const env = `TIDINGS_${flag.slice(2).replace("-", "_").toUpperCase()}`;
  process.stderr.write(`tidings: pnpm echoes ${flag} into logs; set ${env} or save a profile with \`tidings login\` instead\n`);
}
await import(pathToFileURL(built[0]).href);
