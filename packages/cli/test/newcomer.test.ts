// Issue 21 ("a newcomer's first hour"), items 4 and 7, through the built binary against the
// running server: template variables that resolved to nothing are named, unknown fields suggest
// the closest known one, a track event without `event` says so.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace("newcomer");
});

/** A direct admin call (to see the server's answer without the CLI's local checks). */
async function adminCall(method: string, pathname: string, body: unknown) {
  const res = await fetch(new URL(pathname, ws.host), {
    method,
    headers: { authorization: `Bearer ${ws.apiKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("template variables that resolve to nothing", () => {
  beforeAll(async () => {
    const dir = tempDir("newcomer-tpl");
    writeFileSync(
      path.join(dir, "welcome.yaml"),
      "kind: Template\nname: Welcome\ndefinition:\n  type: Sms\n  body: 'Hi {{ user.firstName }} ({{ user.userId }}, {{ user.id }}) from {{ workspace.name }}: {{ event.properties.plan }}'\n",
    );
    expect((await runCli(["apply", "-f", dir], { env: ws.env })).status).toBe(0);
    expect(
      (await runCli(["events", "send", "--type", "identify", "--user-id", "ada", "--traits", '{"firstName":"Ada"}'], { env: ws.env }))
        .status,
    ).toBe(0);
  });

  it("`templates render` prints the rendered fields and warns on stderr about each unresolved variable", async () => {
    let res = await runCli(["templates", "render", "Welcome", "--user-id", "ada"], { env: ws.env });
    // The identify may still be committing: render again until the trait is there.
    for (let i = 0; i < 20 && !res.stdout.includes("Hi Ada"); i++) {
      await new Promise((r) => setTimeout(r, 200));
      res = await runCli(["templates", "render", "Welcome", "--user-id", "ada"], { env: ws.env });
    }
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^body: "Hi Ada \(, ada\) from newcomer-\S+: "$/m);
    expect(res.stderr).toBe(
      "warning: {{ user.userId }} in definition.body resolved to nothing and rendered empty (the user's id is user.id)\n" +
        "warning: {{ event.properties.plan }} in definition.body resolved to nothing and rendered empty\n",
    );
  });

  it("--event fills `event`; --json lists the unresolved variables with their field", async () => {
    const res = await runCli(
      ["templates", "render", "Welcome", "--user-id", "ada", "--event", '{"event":"Upgraded","properties":{"plan":"pro"}}', "--json"],
      { env: ws.env },
    );
    expect(res.status).toBe(0);
    const out = JSON.parse(res.stdout) as { rendered: { body: string }; unresolved: unknown[] };
    expect(out.rendered.body).toMatch(/: pro$/);
    expect(out.unresolved).toEqual([{ path: "definition.body", variable: "user.userId" }]);
  });

  it("the render endpoint answers `unresolved` for an inline definition (variables assigned in the template are not listed)", async () => {
    const { status, body } = await adminCall("POST", "/api/admin/content/templates/render", {
      definition: {
        type: "Email",
        from: "a@example.com",
        subject: "{{ event.event }}",
        body: "{% assign n = 1 %}{{ n }}{{ user.plan }}{{ user.id }}",
      },
      user: { id: "u1" },
    });
    expect(status).toBe(200);
    expect(body.unresolved).toEqual([
      { path: "definition.subject", variable: "event.event" },
      { path: "definition.body", variable: "user.plan" },
    ]);
  });
});

describe("unknown fields suggest the closest known one", () => {
  it("apply (checked before sending): within_seconds → withinSeconds, exit 2", async () => {
    const dir = tempDir("newcomer-typo");
    writeFileSync(
      path.join(dir, "typo.yaml"),
      "kind: Segment\nname: Typo\ndefinition:\n  entryNode: { type: Performed, id: a, event: E, within_seconds: 60 }\n",
    );
    const res = await runCli(["apply", "-f", dir], { env: ws.env });
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(
      /typo\.yaml:4:50: definition\.entryNode\.within_seconds: unknown field "within_seconds" \(did you mean "withinSeconds"\?\)/,
    );
  });

  it("the server's 400 names it too", async () => {
    const { status, body } = await adminCall("PUT", "/api/admin/segments", {
      name: "Typo",
      definition: { entryNode: { type: "Performed", id: "a", event: "E", within_seconds: 60 }, nodes: [] },
    });
    expect(status).toBe(400);
    expect((body.error as { issues: unknown[] }).issues).toContainEqual({
      path: "definition.entryNode.within_seconds",
      message: 'unknown field "within_seconds" (did you mean "withinSeconds"?)',
    });
  });
});

describe("a track event without `event`", () => {
  it("events send: refused before sending, saying track needs `event` (exit 2)", async () => {
    const res = await runCli(["events", "send", "--user-id", "ada"], { env: ws.env });
    expect(res.status).toBe(2);
    expect(res.stderr).toContain("event: track needs `event` (the action's name)");
  });

  it("a batch item without it (events import): the server's rejection says track needs `event`", async () => {
    const file = path.join(tempDir("newcomer-import"), "events.ndjson");
    writeFileSync(file, '{"type":"track","userId":"ada","event":"Ok"}\n{"type":"track","userId":"ada","properties":{"x":1}}\n');
    const res = await runCli(["events", "import", file], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/line 2: .*event: track needs `event` \(the action's name\)/);
  });
});

describe("a webhook URL the send-time guard refuses", () => {
  it("apply saves the template and warns on stderr, for an IP literal and a name resolving to loopback; a public URL gets no warning", async () => {
    const dir = tempDir("newcomer-webhook");
    writeFileSync(
      path.join(dir, "hooks.yaml"),
      [
        "kind: Template\nname: Local hook\ndefinition: { type: Webhook, method: POST, url: 'http://127.0.0.1:8080/hook' }\n",
        "kind: Template\nname: Named local hook\ndefinition: { type: Webhook, method: POST, url: 'http://localhost:8080/{{ user.id }}' }\n",
        "kind: Template\nname: Public hook\ndefinition: { type: Webhook, method: POST, url: 'https://192.0.2.1/{{ user.id }}' }\n",
      ].join("---\n"),
    );
    const res = await runCli(["apply", "-f", dir], { env: ws.env });
    expect(res.status, res.stderr).toBe(0);
    const file = path.join(dir, "hooks.yaml");
    const hint = "; an operator may allow the host with TIDINGS_OUTBOUND_ALLOWED_HOSTS";
    expect(res.stderr.split("\n")).toEqual([
      `warning: Template "Local hook" (${file}#1) definition.url: sends to it will fail (webhook target refused): 127.0.0.1 is a loopback address${hint}`,
      expect.stringMatching(
        new RegExp(
          `^warning: Template "Named local hook" \\(${file.replaceAll(/[.\\/]/g, "\\$&")}#2\\) definition\\.url: sends to it will fail \\(webhook target refused\\): localhost resolves to a loopback address; an operator may allow the host`,
        ),
      ),
      "",
    ]);
  });

  it("PUT answers the warning in `warnings`", async () => {
    const { status, body } = await adminCall("PUT", "/api/admin/content/templates", {
      name: "Private hook",
      draft: { type: "Webhook", method: "POST", url: "http://10.1.2.3/hook" },
    });
    expect(status).toBe(200);
    expect(body.warnings).toEqual([
      {
        path: "draft.url",
        message: expect.stringMatching(/^sends to it will fail \(webhook target refused\): 10\.1\.2\.3 is a private address/),
      },
    ]);
  });
});

describe("the journey draft format (docs/journeys.md)", () => {
  it("the documented draft example, applied as it stands (ids filled in), compiles to what the doc says", async () => {
    const doc = readFileSync(fileURLToPath(new URL("../../../docs/journeys.md", import.meta.url)), "utf8");
    const example = [...doc.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => m[1]!).find((b) => b.includes('"edges"'));
    expect(example, "docs/journeys.md has a draft example").toBeDefined();
    const dir = tempDir("newcomer-draft");
    writeFileSync(
      path.join(dir, "deps.yaml"),
      "kind: Segment\nname: VIP\ndefinition: { entryNode: { type: Trait, id: v, path: vip, operator: { type: Exists } } }\n---\nkind: Template\nname: Welcome mail\ndefinition: { type: Email, from: hi@acme.test, subject: Hi, body: '<p>Hi</p>' }\n",
    );
    expect((await runCli(["apply", "-f", dir], { env: ws.env })).status).toBe(0);
    const idOf = async (kind: string, name: string) =>
      (JSON.parse((await runCli([kind, "get", name, "--json"], { env: ws.env })).stdout) as { id: string }).id;
    const draft = JSON.parse(
      example!
        .replaceAll("<segment id>", await idOf("segments", "VIP"))
        .replaceAll("<template id>", await idOf("templates", "Welcome mail")),
    ) as unknown;
    writeFileSync(path.join(dir, "journey.json"), JSON.stringify({ kind: "Journey", name: "Documented draft", draft }));
    const applied = await runCli(["apply", "-f", path.join(dir, "journey.json")], { env: ws.env });
    expect(applied.status, applied.stderr).toBe(0);
    const journey = JSON.parse((await runCli(["journeys", "get", "Documented draft", "--json"], { env: ws.env })).stdout) as {
      definition: { nodes: { id: string; type: string; child?: string; trueChild?: string; falseChild?: string }[] };
    };
    // "It compiles to delay-1 → split-1 (true: msg-1, false: ExitNode), msg-1 → ExitNode."
    expect(journey.definition.nodes).toEqual([
      expect.objectContaining({ id: "delay-1", type: "DelayNode", child: "split-1" }),
      expect.objectContaining({ id: "split-1", type: "SegmentSplitNode", trueChild: "msg-1", falseChild: "ExitNode" }),
      expect.objectContaining({ id: "msg-1", type: "MessageNode", child: "ExitNode" }),
    ]);
  });
});

describe("no key on the terminal", () => {
  it("the commands of issue 21 never print the API key or the write key, on success or on a 401", async () => {
    const dir = tempDir("newcomer-keys");
    writeFileSync(path.join(dir, "t.yaml"), "kind: Template\nname: Key check\ndefinition: { type: Sms, body: 'Hi {{ user.nope }}' }\n");
    const wrong = { ...ws.env, TIDINGS_API_KEY: `${ws.apiKey.slice(0, -4)}zzzz`, TIDINGS_WRITE_KEY: `${ws.writeKey.slice(0, -4)}zzzz` };
    const runs: [string[], Record<string, string>][] = [];
    for (const env of [ws.env, wrong]) {
      runs.push(
        [["apply", "-f", dir, "--dry-run"], env],
        [["deliveries", "list"], env],
        [["templates", "render", "Key check", "--user-id", "ada"], env],
        [["events", "send", "--type", "track", "--user-id", "k", "--event", "E"], env],
        [["events", "tail", "--count", "1", "--interval", "100"], env],
        [["broadcasts", "get", "no-such-broadcast"], env],
      );
    }
    const secrets = [ws.apiKey, ws.writeKey, wrong.TIDINGS_API_KEY, wrong.TIDINGS_WRITE_KEY];
    for (const [args, env] of runs) {
      // A tail that gets going is stopped after a moment: only what it printed matters.
      const res = await runCli(args, { env, onSpawn: (child) => setTimeout(() => child.kill("SIGINT"), 5_000).unref() });
      for (const secret of secrets) {
        expect(res.stdout.includes(secret) || res.stderr.includes(secret), `${args.join(" ")}: ${res.stdout}${res.stderr}`).toBe(false);
      }
      if (env === wrong && args[0] !== "events") expect(res.status, `${args.join(" ")}: ${res.stderr}`).toBe(1);
    }
  });
});
