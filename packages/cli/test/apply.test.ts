// `tidings apply` and the list|get|delete commands against a running server.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";
import { startProxy } from "./support/proxy.js";

const GROUP_ID = "5d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e01";
const SEGMENT_ID = "5d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e02";
const TEMPLATE_ID = "5d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e03";

/** A directory of resources: YAML with two documents, JSON, a nested directory. */
function resourceDir(): string {
  const dir = tempDir("apply");
  writeFileSync(
    path.join(dir, "audience.yaml"),
    `kind: SubscriptionGroup
id: ${GROUP_ID}
name: Newsletter
channel: Email
type: OptOut
---
kind: Segment
id: ${SEGMENT_ID}
name: Pro users
definition:
  entryNode: { type: Trait, id: plan, path: plan, operator: { type: Equals, value: pro } }
`,
  );
  writeFileSync(
    path.join(dir, "recent.json"),
    JSON.stringify({
      kind: "Segment",
      name: "Signed up this week",
      definition: { entryNode: { type: "Performed", id: "signup", event: "Signed Up", withinSeconds: 604800 }, nodes: [] },
    }),
  );
  mkdirSync(path.join(dir, "messages"));
  writeFileSync(
    path.join(dir, "messages", "welcome.yml"),
    `kind: Template
id: ${TEMPLATE_ID}
name: Welcome
definition:
  type: Email
  from: "Acme <hello@acme.test>"
  subject: "Welcome {{ user.name }}"
  body: "<p>Hello {{ user.name }}</p>"
`,
  );
  writeFileSync(
    path.join(dir, "messages", "journey.yaml"),
    `kind: Journey
name: Onboarding
definition:
  entryNode: { type: EntryNode, segment: ${SEGMENT_ID}, child: send }
  nodes:
    - { id: send, type: MessageNode, channel: Email, templateId: ${TEMPLATE_ID}, child: ExitNode }
`,
  );
  writeFileSync(path.join(dir, "README.txt"), "not a resource: skipped");
  return dir;
}

interface Outcome {
  kind: string;
  name: string;
  id?: string;
  result: string;
  changes?: string[];
}

describe("tidings apply", () => {
  let ws: Workspace;
  let dir: string;
  const apply = async (...args: string[]) => runCli(["apply", "-f", dir, ...args], { env: ws.env });

  beforeAll(async () => {
    ws = await newWorkspace("apply");
    dir = resourceDir();
  });

  it("shows with --dry-run what it would create, and writes nothing", async () => {
    const res = await apply("--dry-run", "--json");
    expect(res.status).toBe(0);
    const out = JSON.parse(res.stdout) as { dryRun: boolean; resources: Outcome[] };
    expect(out.dryRun).toBe(true);
    expect(out.resources.map((r) => [r.kind, r.name, r.result])).toEqual([
      ["SubscriptionGroup", "Newsletter", "created"],
      ["Segment", "Pro users", "created"],
      ["Segment", "Signed up this week", "created"],
      ["Template", "Welcome", "created"],
      ["Journey", "Onboarding", "created"],
    ]);
    const segments = await adminGet<{ items: unknown[] }>(ws, "/api/admin/segments");
    expect(segments.items).toEqual([]);
  });

  it("creates every resource of a directory, in dependency order, then reports them unchanged on a second run", async () => {
    const first = await apply();
    expect(first.status).toBe(0);
    expect(first.stdout).toMatch(/^KIND\s+NAME\s+ID\s+RESULT\s+FILE$/m);
    expect(first.stdout).toMatch(/^Journey\s+Onboarding\s+[0-9a-f-]{36}\s+created\s+.*journey\.yaml$/m);
    expect(first.stdout).toContain("5 created, 0 updated, 0 unchanged");

    const segments = await adminGet<{ items: { id: string; name: string }[] }>(ws, "/api/admin/segments");
    expect(segments.items.map((s) => s.name).sort()).toEqual(["Pro users", "Signed up this week"]);
    expect(segments.items.find((s) => s.name === "Pro users")!.id).toBe(SEGMENT_ID);

    const second = await apply("--json");
    expect(second.status).toBe(0);
    const out = JSON.parse(second.stdout) as { resources: Outcome[] };
    expect(out.resources).toHaveLength(5);
    for (const r of out.resources) expect(r.result).toBe("unchanged");

    const dry = await apply("--dry-run");
    expect(dry.stdout).toContain("0 to create, 0 to update, 5 unchanged (dry run: nothing was written)");
  });

  it("reports a changed document as updated, naming the changed fields (dry run first)", async () => {
    writeFileSync(
      path.join(dir, "recent.json"),
      JSON.stringify({
        kind: "Segment",
        name: "Signed up this week",
        definition: { entryNode: { type: "Performed", id: "signup", event: "Signed Up", withinSeconds: 86400 } },
      }),
    );
    // What a write would change (the engine sets `lastRecomputed` and `memberCount` on its own time).
    const stored = async () =>
      (
        await adminGet<{ items: { id: string; name: string; definition: unknown; updatedAt: number; definitionUpdatedAt: number }[] }>(
          ws,
          "/api/admin/segments",
        )
      ).items.map(({ id, name, definition, updatedAt, definitionUpdatedAt }) => ({ id, name, definition, updatedAt, definitionUpdatedAt }));
    const before = await stored();
    const dry = await apply("--dry-run");
    expect(dry.stdout).toMatch(/Signed up this week\s+[0-9a-f-]{36}\s+would update \(definition\)/);
    expect(await stored()).toEqual(before);

    const res = await apply("--json");
    const out = JSON.parse(res.stdout) as { resources: Outcome[] };
    expect(out.resources.filter((r) => r.result !== "unchanged")).toEqual([
      expect.objectContaining({ kind: "Segment", name: "Signed up this week", result: "updated", changes: ["definition"] }),
    ]);
  });

  it("validates every file before sending anything: exit 2, each problem named with its file and field", async () => {
    const bad = tempDir("apply-bad");
    writeFileSync(path.join(bad, "a-good.yaml"), "kind: SubscriptionGroup\nname: Would be created\nchannel: Sms\ntype: OptIn\n");
    writeFileSync(
      path.join(bad, "b-typo.yaml"),
      "kind: Segment\nname: Typo\ndefinition:\n  entryNode: { type: Performed, id: a, event: E, within_seconds: 60 }\n---\nkind: Widget\nname: w\n",
    );
    writeFileSync(path.join(bad, "c-broken.json"), "{ not json");
    const res = await runCli(["apply", "-f", bad], { env: ws.env });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain("3 problems in the files; nothing was sent");
    expect(res.stderr).toMatch(/b-typo\.yaml:4:50: definition\.entryNode\.within_seconds: unknown field "within_seconds"/);
    expect(res.stderr).toMatch(/b-typo\.yaml:6:1: kind: unknown kind "Widget"/);
    expect(res.stderr).toMatch(/c-broken\.json: invalid JSON/);
    const groups = await adminGet<{ items: { name: string }[] }>(ws, "/api/admin/subscription-groups");
    expect(groups.items.map((g) => g.name)).not.toContain("Would be created");
  });

  it("exits 1 on an API error, naming the field from the API's issues and the request id", async () => {
    const bad = tempDir("apply-api");
    writeFileSync(path.join(bad, "t.yaml"), "kind: Template\nname: Broken liquid\ndefinition: { type: Sms, body: '{{ user.name ' }\n");
    const res = await runCli(["apply", "-f", bad], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^error: .*t\.yaml \(Template "Broken liquid"\): The template has Liquid syntax errors/m);
    expect(res.stderr).toContain("nothing was written (apply writes every resource or none)");
    expect(res.stderr).toMatch(/\(VALIDATION_FAILED, HTTP 400\)/);
    expect(res.stderr).toMatch(/^ {2}\S*t\.yaml:3:\d+: definition\.body: .*Liquid/m);
    expect(res.stderr).toMatch(/^ {2}request id: \S+$/m);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });
});

describe("tidings apply: the server checks everything first", () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await newWorkspace("apply-conflict");
  });

  it("a name held under another id: the dry run shows the 409 the real run would get, which writes nothing; dropping `id` fixes it", async () => {
    const taken = await runCli(["apply", "-f", writeDir("taken", "kind: Segment\nname: Pro users\n")], { env: ws.env });
    expect(taken.status).toBe(0);
    const dir = writeDir(
      "conflict",
      `kind: SubscriptionGroup\nname: Newsletter\nchannel: Email\ntype: OptOut\n---\nkind: Segment\nid: ${SEGMENT_ID}\nname: Pro users\n`,
    );
    const expectConflict = (res: { status: number | null; stderr: string }) => {
      expect(res.status).toBe(1);
      expect(res.stderr).toMatch(/^error: .*conflict-\w+\/r\.yaml#2 \(Segment "Pro users"\): A segment named "Pro users" already exists/m);
      expect(res.stderr).toContain("drop `id` to update it, or choose another name");
      expect(res.stderr).toMatch(/\(CONFLICT, HTTP 409\)/);
      expect(res.stderr).not.toContain(ws.apiKey);
    };
    const dry = await runCli(["apply", "-f", dir, "--dry-run"], { env: ws.env });
    expectConflict(dry);
    expect(dry.stderr).toContain("the dry run stopped here; nothing was written");

    const real = await runCli(["apply", "-f", dir], { env: ws.env });
    expectConflict(real);
    expect(real.stderr).toContain("nothing was written (apply writes every resource or none)");
    // The group before it in the same file was not written either.
    const groups = await adminGet<{ items: unknown[] }>(ws, "/api/admin/subscription-groups");
    expect(groups.items).toEqual([]);

    writeFileSync(
      path.join(dir, "r.yaml"),
      "kind: SubscriptionGroup\nname: Newsletter\nchannel: Email\ntype: OptOut\n---\nkind: Segment\nname: Pro users\n",
    );
    const fixed = await runCli(["apply", "-f", dir, "--dry-run", "--json"], { env: ws.env });
    expect(fixed.status).toBe(0);
    const plan = JSON.parse(fixed.stdout) as { resources: Outcome[] };
    expect(plan.resources.map((r) => [r.kind, r.result])).toEqual([
      ["SubscriptionGroup", "created"],
      ["Segment", "unchanged"],
    ]);
    expect(plan.resources[0]!.id).toBeUndefined();
  });

  it("a dry run checks references against what the same run creates, and refuses one that exists nowhere", async () => {
    const group = "5d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e11";
    const ok = writeDir(
      "refs",
      `kind: Segment\nname: Subscribers\nsubscriptionGroupId: ${group}\n---\nkind: SubscriptionGroup\nid: ${group}\nname: Digest\nchannel: Email\ntype: OptIn\n`,
    );
    const dry = await runCli(["apply", "-f", ok, "--dry-run"], { env: ws.env });
    expect(dry.stderr).toBe("");
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain("2 to create, 0 to update, 0 unchanged (dry run: nothing was written)");

    const missing = writeDir("refs-missing", `kind: Segment\nname: Orphan\nsubscriptionGroupId: ${group}\n`);
    const res = await runCli(["apply", "-f", missing, "--dry-run"], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^error: .*r\.yaml \(Segment "Orphan"\): Unknown subscription group/m);
    expect(res.stderr).toMatch(/^ {2}\S*r\.yaml:3:1: subscriptionGroupId: no subscription group/m);
  });
});

/** A directory holding `r.yaml` with the given text. */
function writeDir(prefix: string, text: string): string {
  const dir = tempDir(prefix);
  writeFileSync(path.join(dir, "r.yaml"), text);
  return dir;
}

describe("tidings segments|templates|subscription-groups|journeys", () => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await newWorkspace("resources");
    const res = await runCli(["apply", "-f", resourceDir()], { env: ws.env });
    expect(res.status).toBe(0);
  });

  it("lists each kind as a table and as JSON", async () => {
    const table = await runCli(["segments", "list"], { env: ws.env });
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+ID\s+ENTRY\s+MEMBERS\s+UPDATED$/m);
    expect(table.stdout).toMatch(new RegExp(`^Pro users\\s+${SEGMENT_ID}\\s+Trait\\s+\\d+\\s+\\d{4}-`, "m"));

    const json = await runCli(["templates", "list", "--json"], { env: ws.env });
    expect(JSON.parse(json.stdout).items.map((t: { name: string }) => t.name)).toEqual(["Welcome"]);

    const groups = await runCli(["subscription-groups", "list"], { env: ws.env });
    expect(groups.stdout).toMatch(/Newsletter\s+\S+\s+Email\s+OptOut/);

    const journeys = await runCli(["journeys", "list", "--json"], { env: ws.env });
    expect(JSON.parse(journeys.stdout).items).toEqual([expect.objectContaining({ name: "Onboarding", status: "NotStarted" })]);
  });

  it("shows a FAILING column, with the reason and the next retry, when a segment's evaluation fails", async () => {
    const listed = await adminGet<{ items: Record<string, unknown>[]; nextCursor: null }>(ws, "/api/admin/segments");
    const failing = {
      reason: "the stored definition is not a valid segment definition",
      since: 1_800_000_000_000,
      failures: 3,
      retryAt: 1_800_000_040_000,
    };
    const body = JSON.stringify({ ...listed, items: [{ ...listed.items[0], failing }], segments: [{ ...listed.items[0], failing }] });
    // The server answers `failing` only for a definition it cannot evaluate; a proxy stands for one here.
    const proxy = await startProxy(ws.host, ({ method, path: p }) =>
      method === "GET" && p.startsWith("/api/admin/segments?")
        ? { status: 200, headers: { "content-type": "application/json" }, body }
        : undefined,
    );
    try {
      const table = await runCli(["segments", "list"], { env: { ...ws.env, TIDINGS_HOST: proxy.url } });
      expect(table.status, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^NAME\s+ID\s+ENTRY\s+MEMBERS\s+UPDATED\s+FAILING$/m);
      expect(table.stdout).toContain("the stored definition is not a valid segment definition (retry 2027-01-15 08:00:40)");
    } finally {
      await proxy.close();
    }
  });

  it("gets a resource by id or by name; the YAML goes back through apply unchanged", async () => {
    const byName = await runCli(["templates", "get", "Welcome"], { env: ws.env });
    expect(byName.status).toBe(0);
    expect(byName.stdout).toMatch(/^kind: Template$/m);
    expect(byName.stdout).toContain(`id: ${TEMPLATE_ID}`);

    const byId = await runCli(["segments", "get", SEGMENT_ID, "--json"], { env: ws.env });
    expect(JSON.parse(byId.stdout)).toMatchObject({ id: SEGMENT_ID, name: "Pro users" });

    const file = path.join(tempDir("get"), "welcome.yaml");
    writeFileSync(file, byName.stdout);
    const again = await runCli(["apply", "-f", file, "--json"], { env: ws.env });
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout).resources).toEqual([expect.objectContaining({ name: "Welcome", result: "unchanged" })]);
  });

  it("starts and pauses a journey (PUT with status Running / Paused)", async () => {
    const start = await runCli(["journeys", "start", "Onboarding"], { env: ws.env });
    expect(start.status).toBe(0);
    expect(start.stdout).toContain('Journey "Onboarding": NotStarted → Running');
    const journeys = await adminGet<{ items: { status: string }[] }>(ws, "/api/admin/journeys");
    expect(journeys.items[0]!.status).toBe("Running");

    // A running journey holds its segment: the API's 409 is exit 1 with the request id.
    const held = await runCli(["segments", "delete", "Pro users"], { env: ws.env });
    expect(held.status).toBe(1);
    expect(held.stderr).toMatch(/Onboarding.*\(CONFLICT, HTTP 409\)/);
    expect(held.stderr).toMatch(/request id: \S+/);

    const pause = await runCli(["journeys", "pause", "Onboarding", "--json"], { env: ws.env });
    expect(pause.status).toBe(0);
    expect(JSON.parse(pause.stdout).status).toBe("Paused");
  });

  it("deletes by name and by id; a missing one is exit 1", async () => {
    const byName = await runCli(["journeys", "delete", "Onboarding"], { env: ws.env });
    expect(byName.status).toBe(0);
    expect(byName.stdout).toMatch(/^Deleted journey "Onboarding" \([0-9a-f-]{36}\)$/m);

    const byId = await runCli(["segments", "delete", SEGMENT_ID, "--json"], { env: ws.env });
    expect(byId.status).toBe(0);
    expect(JSON.parse(byId.stdout)).toEqual({ deleted: true, kind: "Segment", id: SEGMENT_ID, name: "Pro users" });
    const segments = await adminGet<{ items: { id: string }[] }>(ws, "/api/admin/segments");
    expect(segments.items.map((s) => s.id)).not.toContain(SEGMENT_ID);

    const missingId = await runCli(["segments", "get", SEGMENT_ID], { env: ws.env });
    expect(missingId.status).toBe(1);
    expect(missingId.stderr).toMatch(/not found \(NOT_FOUND, HTTP 404\)/);
    expect(missingId.stderr).toMatch(/request id: \S+/);

    const missingName = await runCli(["templates", "delete", "No such template"], { env: ws.env });
    expect(missingName.status).toBe(1);
    expect(missingName.stderr).toMatch(/no template named "No such template"/);
  });

  it("is scoped to the key's workspace: another workspace's key sees none of it", async () => {
    const other = await newWorkspace("other");
    const res = await runCli(["templates", "list", "--json"], { env: other.env });
    expect(JSON.parse(res.stdout).items).toEqual([]);
    const forbidden = await runCli(["templates", "list", "--workspace", other.workspaceId], { env: ws.env });
    expect(forbidden.status).toBe(1);
    expect(forbidden.stderr).toMatch(/FORBIDDEN, HTTP 403/);
  });
});
