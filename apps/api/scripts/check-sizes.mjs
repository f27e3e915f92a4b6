// `pnpm lint` (apps/api): no source file of src/ over 300 lines and no function over 60 (STYLE.md).
// A function longer for a reason says so on the line above it: `// size: <the reason>`.
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const MAX_FILE_LINES = 300;
const MAX_FUNCTION_LINES = 60;
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");

const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "src"], { cwd: root, encoding: "utf8" })
  .split("\n")
  .filter((f) => f.endsWith(".ts") && !f.startsWith("src/generated/"));

const problems = [];
for (const file of files) {
  const text = readFileSync(path.join(root, file), "utf8");
  const lines = text.split("\n");
  const length = lines.at(-1) === "" ? lines.length - 1 : lines.length;
  if (length > MAX_FILE_LINES) problems.push(`${file}: ${length} lines (at most ${MAX_FILE_LINES}): split it`);
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const excused = /\/\/ size: \S/.test(lines[first - 1] ?? "");
      if (last - first + 1 > MAX_FUNCTION_LINES && !excused) {
        problems.push(`${file}:${first + 1}: a function of ${last - first + 1} lines (at most ${MAX_FUNCTION_LINES}): split it`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
if (problems.length > 0) {
  console.error(problems.join("\n"));
  process.exit(1);
}
console.log(`sizes: ${files.length} files, none over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}`);
