// The four numeric operators through the real binary: segments applied from files with
// GreaterThan and LessThanOrEqual, their members read back with `segments members`.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, expect, it } from "vitest";
import { newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

let ws: Workspace;
let dir: string;
const cli = (...args: string[]) => runCli(args, { env: ws.env });

beforeAll(async () => {
  ws = await newWorkspace("operators");
  dir = tempDir("operators");
  for (const [id, seats] of [
    ["small", 5],
    ["exact", 10],
    ["large", 12],
    ["text", "20"],
  ] as const) {
    const res = await cli("events", "send", "--type", "identify", "--user-id", id, "--traits", JSON.stringify({ seats }));
    expect(res.status, res.stderr).toBe(0);
  }
  const segment = (name: string, op: string) =>
    `kind: Segment\nname: ${name}\ndefinition: { entryNode: { type: Trait, id: s, path: seats, operator: { type: ${op}, value: 10 } } }\n`;
  writeFileSync(
    path.join(dir, "segments.yaml"),
    [segment("Above ten", "GreaterThan"), segment("Up to ten", "LessThanOrEqual")].join("---\n"),
  );
});

/** The segment's members once the engine has computed them (it does within about a second). */
async function members(name: string, expected: string[]) {
  let got: string[] = [];
  for (let i = 0; i < 50; i++) {
    const res = await cli("segments", "members", name, "--json");
    expect(res.status, res.stderr).toBe(0);
    got = (JSON.parse(res.stdout) as { items: { userId: string }[] }).items.map((u) => u.userId).sort();
    if (got.join() === expected.join()) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return got;
}

it("GreaterThan and LessThanOrEqual compare numbers: the bound itself on the ≤ side, a numeric string on neither", async () => {
  const applied = await cli("apply", "-f", path.join(dir, "segments.yaml"));
  expect(applied.status, applied.stderr).toBe(0);
  expect(await members("Above ten", ["large"])).toEqual(["large"]);
  expect(await members("Up to ten", ["exact", "small"])).toEqual(["exact", "small"]);
});
