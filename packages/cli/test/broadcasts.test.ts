// `tidings broadcasts` and `tidings events send` / `users` against a running server: an Email
// broadcast (the Log provider is the default) followed to completion with --wait.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

describe("tidings events send, users, broadcasts", () => {
  let ws: Workspace;
  let dir: string;

  beforeAll(async () => {
    ws = await newWorkspace("broadcasts");
    dir = tempDir("broadcast");
    writeFileSync(path.join(dir, "everyone.yaml"), "entryNode: { type: Everyone, id: all }\n");
    writeFileSync(
      path.join(dir, "hello.json"),
      JSON.stringify({ type: "Email", from: "Acme <hi@acme.test>", subject: "Hello {{ user.name }}", body: "<p>Hi {{ user.name }}</p>" }),
    );
  });

  it("sends identify events from flags; users list and get show them", async () => {
    for (const [id, traits] of [
      ["ada", { email: "ada@example.com", name: "Ada" }],
      ["grace", { email: "grace@example.com", name: "Grace" }],
      ["linus", { email: "linus@example.com", name: "Linus" }],
      ["nomail", { name: "No Mail" }],
    ] as const) {
      const res = await runCli(["events", "send", "--type", "identify", "--user-id", id, "--traits", JSON.stringify(traits)], {
        env: ws.env,
      });
      expect(res.status, res.stderr).toBe(0);
      expect(res.stdout).toBe(`Sent identify for ${id}\n`);
    }
    const track = await runCli(
      ["events", "send", "--data", JSON.stringify({ userId: "ada", event: "Signed Up", properties: { plan: "pro" } })],
      {
        env: ws.env,
      },
    );
    expect(track.status).toBe(0);

    const list = await runCli(["users", "list"], { env: ws.env });
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/^USER ID\s+FIRST SEEN\s+TRAITS$/m);
    expect(list.stdout).toMatch(/^ada\s+\d{4}-.*"email":"ada@example.com"/m);

    const get = await runCli(["users", "get", "ada", "--json"], { env: ws.env });
    const ada = JSON.parse(get.stdout);
    expect(ada.traits).toEqual({ email: "ada@example.com", name: "Ada" });
    expect(ada.recentEvents.map((e: { event: string | null }) => e.event)).toContain("Signed Up");
  });

  it("refuses an invalid event before sending it (exit 2, the field named)", async () => {
    const res = await runCli(["events", "send", "--type", "track", "--user-id", "ada"], { env: ws.env });
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/the event is invalid; nothing was sent\n {2}event: /);
  });

  /** The same broadcast from files, run twice: it must send once. */
  const executeHelloAll = () =>
    runCli(
      [
        "broadcasts",
        "execute",
        "--name",
        "hello-all",
        "--segment",
        path.join(dir, "everyone.yaml"),
        "--template",
        path.join(dir, "hello.json"),
        "--wait",
        "--json",
      ],
      { env: ws.env },
    );

  it("executes an Email broadcast from files and waits: --json prints the final broadcast with sent counts", async () => {
    const res = await executeHelloAll();
    expect(res.status, res.stderr).toBe(0);
    const b = JSON.parse(res.stdout);
    expect(b).toMatchObject({ name: "hello-all", status: "Completed", channel: "Email" });
    expect(b.counts).toEqual({ audience: 4, sent: 3, failed: 0, skipped: 1, pending: 0, deferred: 0 });
    // Not a terminal: progress as plain lines on stderr, the last one the final state.
    const lines = res.stderr.trim().split("\n");
    expect(lines.at(-1)).toMatch(/^Completed\s+\[█+\]\s+100%\s+4\/4\s+sent 3 · failed 0 · skipped 1$/);
    expect(res.stderr).not.toContain("\r");

    const deliveries = await adminGet<{ items: { status: string; userId: string }[] }>(ws, `/api/admin/deliveries?broadcastId=${b.id}`);
    expect(
      deliveries.items
        .filter((d) => d.status === "Sent")
        .map((d) => d.userId)
        .sort(),
    ).toEqual(["ada", "grace", "linus"]);
  });

  it("is idempotent per name: running the same command again sends nothing new", async () => {
    const res = await executeHelloAll();
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout).counts.sent).toBe(3);
    const deliveries = await adminGet<{ items: unknown[] }>(ws, "/api/admin/deliveries");
    expect(deliveries.items).toHaveLength(4);
  });

  it("executes with stored resources named by id or name, lists, gets and cancels", async () => {
    const resources = path.join(dir, "resources.yaml");
    writeFileSync(
      resources,
      `kind: Segment
name: Has email
definition: { entryNode: { type: Trait, id: e, path: email, operator: { type: Exists } } }
---
kind: Template
name: Ping
definition: { type: Email, from: "a@acme.test", subject: "Ping", body: "<p>ping</p>" }
`,
    );
    expect((await runCli(["apply", "-f", resources], { env: ws.env })).status).toBe(0);
    const run = await runCli(
      ["broadcasts", "execute", "--name", "ping", "--segment-id", "Has email", "--template-id", "Ping", "--rate", "50", "--wait"],
      {
        env: ws.env,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^Broadcast "ping" \([0-9a-f-]{36}\) Completed: 3 sent, 0 failed, 0 skipped, 0 pending of 3$/m);

    const list = await runCli(["broadcasts", "list"], { env: ws.env });
    expect(list.stdout).toMatch(/^NAME\s+ID\s+STATUS\s+CHANNEL\s+AUDIENCE\s+SENT\s+FAILED\s+SKIPPED\s+PENDING\s+CREATED$/m);
    expect(list.stdout).toMatch(/^ping\s+\S+\s+Completed\s+Email\s+3\s+3\s+0\s+0\s+0/m);

    const get = await runCli(["broadcasts", "get", "ping", "--json"], { env: ws.env });
    expect(JSON.parse(get.stdout)).toMatchObject({ name: "ping", rateLimitPerSecond: 50 });

    const cancel = await runCli(["broadcasts", "cancel", "ping", "--json"], { env: ws.env });
    expect(cancel.status).toBe(0);
    expect(JSON.parse(cancel.stdout).status).toBe("Completed"); // finished: cancelling changes nothing
  });

  it("checks its inputs before sending: both or neither audience is exit 2; an invalid template file names the field", async () => {
    const both = await runCli(
      [
        "broadcasts",
        "execute",
        "--name",
        "x",
        "--segment",
        path.join(dir, "everyone.yaml"),
        "--segment-id",
        "Has email",
        "--template-id",
        "Ping",
      ],
      { env: ws.env },
    );
    expect(both.status).toBe(2);
    expect(both.stderr).toContain("give exactly one of --segment <file> and --segment-id <id>");

    const badTemplate = path.join(dir, "bad.json");
    writeFileSync(badTemplate, JSON.stringify({ type: "Email", from: "a@acme.test", subject: "s", bodyy: "<p/>" }));
    const bad = await runCli(["broadcasts", "execute", "--name", "y", "--segment-id", "Has email", "--template", badTemplate], {
      env: ws.env,
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain(`--template ${badTemplate}: `);
    expect(bad.stderr).toMatch(/bodyy/);
    const broadcasts = await adminGet<{ items: { name: string }[] }>(ws, "/api/admin/broadcasts");
    expect(broadcasts.items.map((b) => b.name)).not.toContain("y");
  });

  it("deletes a user", async () => {
    const res = await runCli(["users", "delete", "linus"], { env: ws.env });
    expect(res.status).toBe(0);
    const gone = await runCli(["users", "get", "linus"], { env: ws.env });
    expect(gone.status).toBe(1);
    expect(gone.stderr).toMatch(/NOT_FOUND, HTTP 404/);
  });
});
