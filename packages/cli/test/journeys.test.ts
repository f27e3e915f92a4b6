// `tidings journeys stats|runs`, and `apply` of journeys with an exit segment, against a running
// server whose journey workers run in-process: runs are followed from entry to exit or conversion.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

const PRO_ID = "7a1e4c2d-3b5f-4a6e-8c9d-0e1f2a3b4c01";
const TRIAL_ID = "7a1e4c2d-3b5f-4a6e-8c9d-0e1f2a3b4c02";
const CHURNED_ID = "7a1e4c2d-3b5f-4a6e-8c9d-0e1f2a3b4c03";
const TEMPLATE_ID = "7a1e4c2d-3b5f-4a6e-8c9d-0e1f2a3b4c04";

const traitSegment = (id: string, name: string, trait: string, value: string) => `kind: Segment
id: ${id}
name: ${name}
definition:
  entryNode: { type: Trait, id: t, path: ${trait}, operator: { type: Equals, value: ${value} } }
`;

/** Onboarding: entry → one email → exit. Trial nudge: entry → an hour's delay → email → exit. Both end for churned users. */
function resources(): string {
  const dir = tempDir("journeys");
  writeFileSync(
    path.join(dir, "segments.yaml"),
    [
      traitSegment(PRO_ID, "Pro users", "plan", "pro"),
      traitSegment(TRIAL_ID, "Trial users", "plan", "trial"),
      traitSegment(CHURNED_ID, "Churned", "status", "churned"),
    ].join("---\n"),
  );
  writeFileSync(
    path.join(dir, "welcome.yaml"),
    `kind: Template
id: ${TEMPLATE_ID}
name: Welcome
definition: { type: Email, from: "Acme <hi@acme.test>", subject: "Welcome {{ user.name }}", body: "<p>Hi {{ user.name }}</p>" }
`,
  );
  writeFileSync(
    path.join(dir, "journeys.yaml"),
    `kind: Journey
name: Onboarding
exitSegmentId: ${CHURNED_ID}
definition:
  entryNode: { type: EntryNode, segment: ${PRO_ID}, child: send }
  nodes:
    - { id: send, type: MessageNode, channel: Email, templateId: ${TEMPLATE_ID}, child: ExitNode }
---
kind: Journey
name: Trial nudge
exitSegmentId: ${CHURNED_ID}
definition:
  entryNode: { type: EntryNode, segment: ${TRIAL_ID}, child: wait }
  nodes:
    - { id: wait, type: DelayNode, variant: { type: Second, seconds: 3600 }, child: nudge }
    - { id: nudge, type: MessageNode, channel: Email, templateId: ${TEMPLATE_ID}, child: ExitNode }
`,
  );
  return dir;
}

interface NodeStats {
  id: string;
  type: string;
  waiting: number;
  reached: number;
  sent?: number;
  skipped?: number;
  failed?: number;
  queued?: number;
}
interface Stats {
  journeyId: string;
  version: number | null;
  entered: number;
  active: number;
  completed: number;
  converted: number;
  nodes: NodeStats[];
  versions: { version: number; entered: number; active: number; completed: number; converted: number }[];
}
interface Run {
  id: string;
  userId: string;
  version: number;
  status: string;
  nodeId: string;
  waitingUntil: number | null;
  enteredAt: number;
}
interface RunPage {
  items: Run[];
  runs: Run[];
  nextCursor: string | null;
}

/** Reads until `done` holds (the workers run on their own time), or fails with the last value read. */
async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last read ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("tidings journeys stats|runs", () => {
  let ws: Workspace;
  let dir: string;
  const journeyIds = new Map<string, string>();
  const cli = (...args: string[]) => runCli(args, { env: ws.env });
  const identify = async (userId: string, traits: Record<string, string>) => {
    const res = await cli("events", "send", "--type", "identify", "--user-id", userId, "--traits", JSON.stringify(traits));
    expect(res.status, res.stderr).toBe(0);
  };
  const stats = (name: string) => adminGet<Stats>(ws, `/api/admin/journeys/${journeyIds.get(name)}/stats`);

  beforeAll(async () => {
    ws = await newWorkspace("journeys");
    dir = resources();
  });

  it("applies journeys with an exit segment: stored, then unchanged on a second run; null is a change", async () => {
    const first = await cli("apply", "-f", dir, "--json");
    expect(first.status, first.stderr).toBe(0);
    const created = JSON.parse(first.stdout) as { resources: { kind: string; name: string; id: string; result: string }[] };
    expect(created.resources.filter((r) => r.kind === "Journey").map((r) => [r.name, r.result])).toEqual([
      ["Onboarding", "created"],
      ["Trial nudge", "created"],
    ]);
    for (const r of created.resources) if (r.kind === "Journey") journeyIds.set(r.name, r.id);

    const got = await cli("journeys", "get", "Onboarding", "--json");
    expect(JSON.parse(got.stdout)).toMatchObject({ name: "Onboarding", exitSegmentId: CHURNED_ID, status: "NotStarted" });

    const second = await cli("apply", "-f", dir, "--json");
    expect(JSON.parse(second.stdout).resources.map((r: { result: string }) => r.result)).toEqual(Array(6).fill("unchanged"));

    const cleared = path.join(tempDir("journeys-null"), "onboarding.yaml");
    writeFileSync(cleared, `kind: Journey\nname: Onboarding\nexitSegmentId: null\n`);
    const dry = await cli("apply", "-f", cleared, "--dry-run");
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/Onboarding\s+[0-9a-f-]{36}\s+would update \(exitSegmentId\)/);
    expect(
      (await adminGet<{ exitSegmentId: string | null }>(ws, `/api/admin/journeys/${journeyIds.get("Onboarding")}`)).exitSegmentId,
    ).toBe(CHURNED_ID);
  });

  it("takes back the YAML of `journeys get` through apply unchanged", async () => {
    const yaml = await cli("journeys", "get", "Trial nudge");
    expect(yaml.status, yaml.stderr).toBe(0);
    // References come back by name, and apply resolves them to the same ids.
    expect(yaml.stdout).toMatch(/^exitSegmentId:\n {2}name: Churned$/m);
    const file = path.join(tempDir("journeys-get"), "trial.yaml");
    writeFileSync(file, yaml.stdout);
    const again = await cli("apply", "-f", file, "--json");
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).resources).toEqual([expect.objectContaining({ name: "Trial nudge", result: "unchanged" })]);
  });

  it("shows a started journey's counts and per-node table once its runs are through", async () => {
    expect((await cli("journeys", "start", "Onboarding")).status).toBe(0);
    await identify("ada", { plan: "pro", email: "ada@example.com", name: "Ada" });
    await identify("grace", { plan: "pro", email: "grace@example.com", name: "Grace" });
    await identify("nomail", { plan: "pro", name: "No Mail" });
    await identify("linus", { plan: "free", email: "linus@example.com", name: "Linus" });

    await until(
      "three completed runs, their messages settled",
      () => stats("Onboarding"),
      (s) => s.completed === 3 && s.active === 0 && s.nodes.find((n) => n.id === "send")?.queued === 0,
    );

    const json = await cli("journeys", "stats", "Onboarding", "--json");
    expect(json.status, json.stderr).toBe(0);
    const s = JSON.parse(json.stdout) as Stats;
    expect(s).toMatchObject({ journeyId: journeyIds.get("Onboarding"), version: null, entered: 3, active: 0, completed: 3, converted: 0 });
    expect(s.nodes.find((n) => n.id === "send")).toEqual({
      id: "send",
      type: "MessageNode",
      waiting: 0,
      reached: 3,
      sent: 2,
      skipped: 1,
      failed: 0,
      queued: 0,
      deferred: 0,
    });
    expect(s.versions).toEqual([{ version: 1, entered: 3, active: 0, completed: 3, converted: 0 }]);

    const table = await cli("journeys", "stats", journeyIds.get("Onboarding")!);
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^Journey "Onboarding" \([0-9a-f-]{36}\), all versions$/m);
    expect(table.stdout).toMatch(/^ENTERED\s+ACTIVE\s+COMPLETED\s+CONVERTED\n\s*3\s+0\s+3\s+0$/m);
    expect(table.stdout).toMatch(/^NODE\s+TYPE\s+WAITING\s+REACHED\s+SENT\s+SKIPPED\s+FAILED\s+QUEUED\s+DEFERRED$/m);
    expect(table.stdout).toMatch(/^send\s+MessageNode\s+0\s+3\s+2\s+1\s+0\s+0\s+0$/m);
    // The exit sends nothing: its delivery columns are blank, not 0.
    expect(table.stdout).toMatch(/^ExitNode\s+\S+\s+0\s+3$/m);
    // One version only: no per-version table.
    expect(table.stdout).not.toMatch(/^\s*VERSION\s+ENTERED/m);

    const v1 = await cli("journeys", "stats", "Onboarding", "--definition-version", "1", "--json");
    expect(v1.status, v1.stderr).toBe(0);
    expect(JSON.parse(v1.stdout)).toMatchObject({ version: 1, entered: 3, completed: 3 });
  }, 120_000);

  it("lists runs as a table, filtered by user and status, page by page or --all", async () => {
    const table = await cli("journeys", "runs", "Onboarding");
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+USER\s+VERSION\s+STATUS\s+NODE\s+WAITING UNTIL\s+ENTERED$/m);
    expect(table.stdout).toMatch(/^[0-9a-f-]{36}\s+ada\s+1\s+Completed\s+\S+\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    expect(table.stdout).not.toMatch(/linus/);

    const all = JSON.parse((await cli("journeys", "runs", "Onboarding", "--all", "--json")).stdout) as RunPage;
    expect(all.items.map((r) => r.userId).sort()).toEqual(["ada", "grace", "nomail"]);
    expect(all.nextCursor).toBeNull();

    const ada = JSON.parse((await cli("journeys", "runs", "Onboarding", "--user", "ada", "--json")).stdout) as RunPage;
    expect(ada.items).toEqual([expect.objectContaining({ userId: "ada", status: "Completed", version: 1, waitingUntil: null })]);
    const active = JSON.parse((await cli("journeys", "runs", "Onboarding", "--status", "Active", "--json")).stdout) as RunPage;
    expect(active.items).toEqual([]);
    expect((await cli("journeys", "runs", "Onboarding", "--status", "Active")).stdout).toBe("(no runs)\n");

    const first = await cli("journeys", "runs", "Onboarding", "--limit", "2", "--json");
    const page1 = JSON.parse(first.stdout) as RunPage;
    expect(page1.items).toHaveLength(2);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const firstTable = await cli("journeys", "runs", "Onboarding", "--limit", "2");
    expect(firstTable.stderr).toContain(`more: --cursor ${page1.nextCursor} (or --all)`);
    const page2 = JSON.parse(
      (await cli("journeys", "runs", "Onboarding", "--limit", "2", "--cursor", page1.nextCursor!, "--json")).stdout,
    ) as RunPage;
    expect([...page1.items, ...page2.items].map((r) => r.id).sort()).toEqual(all.items.map((r) => r.id).sort());
  });

  it("shows runs waiting in a delay, and a run ended by the exit segment as converted", async () => {
    expect((await cli("journeys", "start", "Trial nudge")).status).toBe(0);
    const before = Date.now();
    await identify("tara", { plan: "trial", email: "tara@example.com" });
    await identify("tom", { plan: "trial", email: "tom@example.com" });
    await until(
      "two runs waiting in the delay",
      () => stats("Trial nudge"),
      (s) => s.nodes.find((n) => n.id === "wait")?.waiting === 2,
    );

    const waiting = JSON.parse((await cli("journeys", "runs", "Trial nudge", "--status", "Active", "--json")).stdout) as RunPage;
    expect(waiting.items.map((r) => [r.userId, r.nodeId]).sort()).toEqual([
      ["tara", "wait"],
      ["tom", "wait"],
    ]);
    for (const r of waiting.items) expect(r.waitingUntil).toBeGreaterThanOrEqual(before + 3_600_000 - 5_000);
    const table = await cli("journeys", "runs", "Trial nudge");
    expect(table.stdout).toMatch(
      /^[0-9a-f-]{36}\s+tom\s+1\s+Active\s+wait\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m,
    );

    await identify("tara", { plan: "trial", email: "tara@example.com", status: "churned" });
    await until(
      "tara's run converted",
      () => stats("Trial nudge"),
      (s) => s.converted === 1,
    );
    const converted = JSON.parse((await cli("journeys", "runs", "Trial nudge", "--status", "Converted", "--json")).stdout) as RunPage;
    expect(converted.items.map((r) => r.userId)).toEqual(["tara"]);
    const user = await cli("users", "get", "tara");
    expect(user.stdout).toMatch(/^Journey runs\nJOURNEY\s+STATUS\s+NODE\s+ENTERED\nTrial nudge\s+Converted\s+wait\s+\d{4}-/m);
    expect(user.stdout).toMatch(/^Segment entries and exits\nTIME\s+SEGMENT\s+CHANGE\n(\d{4}-\S+ \S+\s+\S.*\s+(entered|left)\n)+/m);
    expect(user.stdout).toMatch(/^\d{4}-\S+ \S+\s+Churned\s+entered$/m);

    const out = await cli("journeys", "stats", "Trial nudge");
    expect(out.stdout).toMatch(/^ENTERED\s+ACTIVE\s+COMPLETED\s+CONVERTED\n\s*2\s+1\s+0\s+1$/m);
    expect(out.stdout).toMatch(/^wait\s+DelayNode\s+1\s+2$/m);
    expect(out.stdout).toMatch(/^nudge\s+MessageNode\s+0\s+0\s+0\s+0\s+0\s+0\s+0$/m);
  }, 120_000);

  it("refuses bad input before sending (exit 2) and reports what the API says (exit 1)", async () => {
    const status = await cli("journeys", "runs", "Onboarding", "--status", "Paused");
    expect(status.status).toBe(2);
    expect(status.stderr).toMatch(/--status.*Allowed choices are Active, Completed, Converted, Ended/);
    const version = await cli("journeys", "stats", "Onboarding", "--definition-version", "0");
    expect(version.status).toBe(2);
    expect(version.stderr).toMatch(/--definition-version.*expected a whole number/);

    const missing = await cli("journeys", "stats", "No such journey");
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no journey named "No such journey"/);

    // Another workspace's key does not see this workspace's journey, even by id.
    const other = await newWorkspace("journeys-other");
    for (const command of ["stats", "runs"]) {
      const res = await runCli(["journeys", command, journeyIds.get("Onboarding")!], { env: other.env });
      expect(res.status, command).toBe(1);
      expect(res.stderr, command).toMatch(/NOT_FOUND, HTTP 404/);
    }
  });

  it("says in --help what stats and runs show", async () => {
    const group = await runCli(["journeys", "--help"]);
    expect(group.stdout).toMatch(/stats \[options\] <id-or-name>\s+Show a journey's run counts/);
    expect(group.stdout).toMatch(/runs \[options\] <id-or-name>\s+List a journey's runs/);
    const stats = await runCli(["journeys", "stats", "--help"]);
    expect(stats.stdout).toContain("--definition-version <n>");
  });
});
