// Files people write by hand (issue 38): references by name, one message per mistake at its
// `file:line:column`, and the docs' example files applied exactly as written.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

const writeDir = (prefix: string, files: Record<string, string>) => {
  const dir = tempDir(prefix);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
};

const hook = `kind: Template
name: Welcome hook
definition: { type: Webhook, url: "https://hooks.acme.test/welcome", method: POST, body: '{"user":"{{ user.id }}"}' }
`;

describe("references by name", () => {
  let ws: Workspace;
  const apply = (dir: string, ...args: string[]) => runCli(["apply", "-f", dir, ...args], { env: ws.env });
  beforeAll(async () => {
    ws = await newWorkspace("files-refs");
  });

  it("a journey names a template and a segment created by the same apply; the stored journey holds their ids", async () => {
    const dir = writeDir("refs", {
      "a.yaml": `${hook}---
kind: Segment
name: Trial users
definition: { entryNode: { type: Trait, id: plan, path: plan, operator: { type: Equals, value: trial } } }
`,
      "b.yaml": `kind: Journey
name: Welcome
exitSegmentId: { name: Trial users }
definition:
  entryNode: { type: EventEntryNode, event: Signed Up, child: hook }
  nodes:
    - { id: hook, type: MessageNode, channel: Webhook, templateId: { name: Welcome hook }, child: ExitNode }
`,
    });
    const dry = await apply(dir, "--dry-run");
    expect(dry.status, dry.stderr).toBe(0);
    expect(dry.stdout).toContain("3 to create, 0 to update, 0 unchanged");
    const res = await apply(dir);
    expect(res.status, res.stderr).toBe(0);
    const templates = await adminGet<{ items: { id: string; name: string }[] }>(ws, "/api/admin/content/templates");
    const segments = await adminGet<{ items: { id: string; name: string }[] }>(ws, "/api/admin/segments");
    const journeys = await adminGet<{ items: { exitSegmentId: string; definition: { nodes: { templateId: string }[] } }[] }>(
      ws,
      "/api/admin/journeys",
    );
    expect(journeys.items[0]!.definition.nodes[0]!.templateId).toBe(templates.items.find((t) => t.name === "Welcome hook")!.id);
    expect(journeys.items[0]!.exitSegmentId).toBe(segments.items.find((s) => s.name === "Trial users")!.id);
    expect((await apply(dir)).stdout).toContain("0 created, 0 updated, 3 unchanged");
  });

  it("`get` writes references back as names, and applying what it wrote changes nothing", async () => {
    const got = await runCli(["journeys", "get", "Welcome"], { env: ws.env });
    expect(got.status, got.stderr).toBe(0);
    expect(got.stdout).toMatch(/^ {6}templateId:\n {8}name: Welcome hook$/m);
    expect(got.stdout).toMatch(/^exitSegmentId:\n {2}name: Trial users$/m);
    const ids = await runCli(["journeys", "get", "Welcome", "--ids"], { env: ws.env });
    expect(ids.stdout).toMatch(/^ {6}templateId: [0-9a-f-]{36}$/m);
    const again = await apply(writeDir("roundtrip", { "welcome.yaml": got.stdout }));
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain("0 created, 0 updated, 1 unchanged");
  });

  it("a name that resolves to nothing: exit 2, at its line, naming the field, the name and the closest names", async () => {
    const dir = writeDir("refs-bad", {
      "j.yaml": `kind: Journey
name: Typo
definition:
  entryNode: { type: EventEntryNode, event: Signed Up, child: hook }
  nodes:
    - id: hook
      type: MessageNode
      channel: Webhook
      templateId: { name: Welcom hook }
      child: ExitNode
`,
    });
    const res = await apply(dir);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain("1 problem in the files; nothing was sent");
    expect(res.stderr).toMatch(
      /j\.yaml:9:7: definition\.nodes\.0\.templateId: no template named "Welcom hook" in the files or the workspace \(closest: "Welcome hook"\)$/m,
    );
  });

  it("a name where an id goes says how to refer by name, once (not also `Invalid UUID`)", async () => {
    const dir = writeDir("refs-bare", {
      "j.json": JSON.stringify(
        {
          kind: "Journey",
          name: "Bare",
          definition: {
            entryNode: { type: "EventEntryNode", event: "Signed Up", child: "hook" },
            nodes: [{ id: "hook", type: "MessageNode", channel: "Webhook", templateId: "Welcome hook", child: "ExitNode" }],
          },
        },
        null,
        2,
      ),
    });
    const res = await apply(dir);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(
      /j\.json:15:9: definition\.nodes\.0\.templateId: expected a template id; to refer to the template named "Welcome hook", write `templateId: \{name: "Welcome hook"\}`$/m,
    );
    expect(res.stderr).not.toMatch(/UUID/i);
  });
});

describe("one message per mistake, at its line", () => {
  let ws: Workspace;
  beforeAll(async () => {
    ws = await newWorkspace("files-typos");
  });

  it("a misspelt key is one issue with the key it stands for; a dangling child suggests the node id", async () => {
    const dir = writeDir("typos", {
      "j.yaml": `kind: Journey
name: Typos
definition:
  entryNode: { type: EventEntryNode, event: Signed Up, child: wait }
  nodes:
    - id: wait
      type: DelayNode
      variant: { type: Second, seconds: 20 }
      chlid: ExitNode
---
kind: Journey
name: Dangling
definition:
  entryNode: { type: EventEntryNode, event: Signed Up, child: wiat }
  nodes:
    - { id: wait, type: DelayNode, variant: { type: Second, seconds: 20 }, child: ExitNode }
`,
    });
    const res = await runCli(["apply", "-f", dir], { env: ws.env });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain("2 problems in the files; nothing was sent");
    expect(res.stderr).toMatch(/^ {2}\S*j\.yaml:9:7: definition\.nodes\.0\.chlid: unknown field "chlid" \(did you mean "child"\?\)$/m);
    expect(res.stderr).toMatch(
      /^ {2}\S*j\.yaml:14:56: definition\.entryNode\.child: names no node of the definition: "wiat" \(did you mean "wait"\?\)$/m,
    );
    expect(res.stderr).not.toMatch(/expected string, received undefined|required/);
  });

  it("the server's 400 says the same, once", async () => {
    const res = await fetch(new URL("/api/admin/journeys", ws.host), {
      method: "PUT",
      headers: { authorization: `Bearer ${ws.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "Typo",
        definition: {
          entryNode: { type: "EventEntryNode", event: "E", child: "wait" },
          nodes: [{ id: "wait", type: "DelayNode", variant: { type: "Second", seconds: 1 }, chlid: "ExitNode" }],
        },
      }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { issues: { path: string; message: string }[] } };
    expect(body.error.issues).toEqual([{ path: "definition.nodes.0.chlid", message: 'unknown field "chlid" (did you mean "child"?)' }]);
  });

  it("an issue the server finds points at the line of the file too", async () => {
    const dir = writeDir("server-issue", {
      "t.yaml": "kind: Template\nname: Broken\ndefinition:\n  type: Sms\n  body: '{{ user.name '\n",
    });
    const res = await runCli(["apply", "-f", dir], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/^ {2}\S*t\.yaml:5:3: definition\.body: .*Liquid/m);
  });
});

describe("the docs' example files", () => {
  const docs = fileURLToPath(new URL("../../../docs/", import.meta.url));
  const examples = readdirSync(docs)
    .filter((f) => f.endsWith(".md"))
    .flatMap((f) =>
      [...readFileSync(path.join(docs, f), "utf8").matchAll(/^```(?:yaml|json) file=(\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({
        doc: f,
        file: m[1]!,
        text: m[2]!,
      })),
    );

  it("exist for templates and journeys", () => {
    expect(examples.map((e) => e.doc)).toEqual(expect.arrayContaining(["templates.md", "journeys.md"]));
  });

  for (const doc of [...new Set(examples.map((e) => e.doc))]) {
    it(`${doc}: applied as written, then unchanged on a second apply`, async () => {
      const ws = await newWorkspace(`docs-${doc.replace(/\W/g, "")}`);
      const dir = tempDir("docs");
      for (const e of examples.filter((x) => x.doc === doc)) writeFileSync(path.join(dir, path.basename(e.file)), e.text);
      const first = await runCli(["apply", "-f", dir], { env: ws.env });
      expect(first.status, first.stderr).toBe(0);
      expect(first.stderr).not.toMatch(/^error:/m);
      const second = await runCli(["apply", "-f", dir, "--json"], { env: ws.env });
      const out = JSON.parse(second.stdout) as { resources: { result: string }[] };
      expect(out.resources.every((r) => r.result === "unchanged")).toBe(true);
    });
  }
});
