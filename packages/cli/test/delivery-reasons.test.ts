// Why did my messages fail? `broadcasts execute --wait` exit codes, a repeated name said out loud,
// `deliveries list|get` with their reasons, and segment members with when they entered.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

interface Delivery {
  id: string;
  userId: string;
  status: string;
  reason?: string;
  broadcastId?: string;
}

describe("tidings deliveries, broadcasts execute --wait exit codes, segment members", () => {
  let ws: Workspace;
  let dir: string;
  const cli = (...args: string[]) => runCli(args, { env: ws.env });
  const noSecret = (res: { stderr: string; stdout: string }) => {
    expect(res.stderr).not.toContain(ws.apiKey);
    expect(res.stdout).not.toContain(ws.apiKey);
  };

  beforeAll(async () => {
    ws = await newWorkspace("deliveries");
    dir = tempDir("deliveries");
    writeFileSync(path.join(dir, "everyone.yaml"), "entryNode: { type: Everyone, id: all }\n");
    writeFileSync(
      path.join(dir, "nobody.yaml"),
      "entryNode: { type: Trait, id: t, path: plan, operator: { type: Equals, value: none } }\n",
    );
    // Loopback is refused by the webhook guard: a permanent failure, with its reason.
    writeFileSync(
      path.join(dir, "hook.json"),
      JSON.stringify({ type: "Webhook", url: "http://127.0.0.1:9/hook", method: "POST", body: "{}" }),
    );
    writeFileSync(path.join(dir, "mail.json"), JSON.stringify({ type: "Email", from: "a@acme.test", subject: "Hi", body: "<p>hi</p>" }));
    for (const id of ["ada", "bob"]) {
      const res = await cli("events", "send", "--type", "identify", "--user-id", id, "--traits", JSON.stringify({ plan: "pro" }));
      expect(res.status, res.stderr).toBe(0);
    }
    writeFileSync(
      path.join(dir, "pro.yaml"),
      "kind: Segment\nname: Pro\ndefinition: { entryNode: { type: Trait, id: p, path: plan, operator: { type: Equals, value: pro } } }\n",
    );
    expect((await cli("apply", "-f", path.join(dir, "pro.yaml"))).status).toBe(0);
  });

  const executeHook = (...extra: string[]) =>
    cli(
      "broadcasts",
      "execute",
      "--name",
      "hook",
      "--segment",
      path.join(dir, "everyone.yaml"),
      "--template",
      path.join(dir, "hook.json"),
      ...extra,
    );

  it("--wait exits 3 when messages failed, and says where to see why", async () => {
    const res = await executeHook("--wait");
    noSecret(res);
    expect(res.stdout).toMatch(/^Broadcast "hook" \([0-9a-f-]{36}\) Completed: 0 sent, 2 failed, 0 skipped, 0 pending of 2$/m);
    expect(res.stderr).toMatch(/some messages failed; see why: tidings deliveries list --broadcast [0-9a-f-]{36} --status failed/);
    expect(res.status).toBe(3);
  });

  it("a repeated name says it was already executed and nothing was sent", async () => {
    const again = await executeHook();
    expect(again.status).toBe(0);
    expect(again.stderr).toMatch(/^Broadcast "hook" was already executed on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; nothing sent/m);
    expect(again.stdout).toMatch(/^Broadcast "hook" \([0-9a-f-]{36}\) Completed: 0 sent, 2 failed/m);
    const waited = await executeHook("--wait", "--json");
    expect(waited.stderr).toContain("already executed");
    expect(JSON.parse(waited.stdout).counts.failed).toBe(2);
    expect(waited.status).toBe(3);
    const list = await cli("deliveries", "list", "--json");
    expect((JSON.parse(list.stdout) as { items: Delivery[] }).items).toHaveLength(2);
  });

  it("--wait exits 3 when nothing was sent (an empty audience); --help lists the exit codes", async () => {
    const empty = await cli(
      "broadcasts",
      "execute",
      "--name",
      "empty",
      "--segment",
      path.join(dir, "nobody.yaml"),
      "--template",
      path.join(dir, "mail.json"),
      "--wait",
    );
    expect(empty.stdout).toMatch(/Completed: 0 sent, 0 failed, 0 skipped, 0 pending of 0/);
    expect(empty.stderr).toContain("nothing was sent; see why: tidings deliveries list --broadcast");
    expect(empty.status).toBe(3);
    const help = await cli("broadcasts", "execute", "--help");
    expect(help.stdout).toMatch(/Exit codes with --wait: 0 the broadcast completed and every message was sent/);
    expect(help.stdout).toMatch(/3 it completed but some message failed or none\s+was sent; 1 it failed or was cancelled/);
  });

  it("deliveries list filters by broadcast (name or id), user and status, and shows each reason", async () => {
    const res = await cli("deliveries", "list", "--broadcast", "hook", "--status", "failed");
    noSecret(res);
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^CREATED\s+ID\s+USER\s+CHANNEL\s+STATUS\s+ATTEMPTS\s+SOURCE\s+REASON$/m);
    expect(res.stdout).toMatch(/^\d{4}-.*\s+ada\s+Webhook\s+Failed\s+1\s+broadcast "hook"\s+webhook target refused: /m);
    expect(res.stdout).toMatch(/\s+bob\s+Webhook\s+Failed\s+/);

    const ada = await cli("deliveries", "list", "--user", "ada", "--json");
    const items = (JSON.parse(ada.stdout) as { items: Delivery[] }).items;
    expect(items.map((d) => d.userId)).toEqual(["ada"]);
    expect(items[0]!.reason).toMatch(/^webhook target refused/);

    const sent = await cli("deliveries", "list", "--broadcast", items[0]!.broadcastId!, "--status", "Sent");
    expect(sent.stdout.trim()).toBe("(no deliveries)");

    const bad = await cli("deliveries", "list", "--status", "lost");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("expected one of Queued, Sending, Sent, Failed, Skipped");
    const missing = await cli("deliveries", "list", "--broadcast", "no such broadcast");
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('no broadcast named "no such broadcast"');
  });

  it("deliveries get shows one delivery with its reason; an unknown id is exit 1", async () => {
    const list = await cli("deliveries", "list", "--user", "bob", "--json");
    const id = (JSON.parse(list.stdout) as { items: Delivery[] }).items[0]!.id;
    const res = await cli("deliveries", "get", id);
    noSecret(res);
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^status: Failed$/m);
    expect(res.stdout).toMatch(/^reason: "?webhook target refused: /m);
    expect(res.stdout).toMatch(/^source: broadcast "hook"$/m);
    const json = JSON.parse((await cli("deliveries", "get", id, "--json")).stdout) as Delivery;
    expect(json).toMatchObject({ id, userId: "bob", status: "Failed" });

    const unknown = await cli("deliveries", "get", "00000000-0000-4000-8000-000000000000");
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/Delivery 00000000-0000-4000-8000-000000000000 not found \(NOT_FOUND, HTTP 404\)/);
  });

  it("deliveries list --journey NAME shows a journey's messages with their reasons", async () => {
    const tplId = "6d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e21";
    const segId = "6d7b0c3e-2a51-4c1b-8f0e-1a2b3c4d5e22";
    writeFileSync(
      path.join(dir, "journey.yaml"),
      `kind: Segment
id: ${segId}
name: Pro for journey
definition: { entryNode: { type: Trait, id: p, path: plan, operator: { type: Equals, value: pro } } }
---
kind: Template
id: ${tplId}
name: Hook
definition: { type: Webhook, url: "http://127.0.0.1:9/journey", method: POST, body: "{}" }
---
kind: Journey
name: Hooked
definition:
  entryNode: { type: EntryNode, segment: ${segId}, child: send }
  nodes:
    - { id: send, type: MessageNode, channel: Webhook, templateId: ${tplId}, child: ExitNode }
`,
    );
    expect((await cli("apply", "-f", path.join(dir, "journey.yaml"))).status).toBe(0);
    expect((await cli("journeys", "start", "Hooked")).status).toBe(0);
    let items: Delivery[] = [];
    for (let i = 0; i < 75 && items.filter((d) => d.status === "Failed").length < 2; i++) {
      const res = await cli("deliveries", "list", "--journey", "Hooked", "--json");
      expect(res.status, res.stderr).toBe(0);
      items = (JSON.parse(res.stdout) as { items: Delivery[] }).items;
      if (items.filter((d) => d.status === "Failed").length < 2) await new Promise((r) => setTimeout(r, 200));
    }
    expect(items.map((d) => d.userId).sort()).toEqual(["ada", "bob"]);
    for (const d of items) expect(d.reason).toMatch(/^webhook target refused/);
    const table = await cli("deliveries", "list", "--journey", "Hooked", "--user", "ada");
    expect(table.stdout).toMatch(/\s+ada\s+Webhook\s+Failed\s+1\s+journey "Hooked" node send\s+webhook target refused: /);
    expect(table.stdout).not.toMatch(/\sbob\s/);
    const get = await cli("deliveries", "get", items[0]!.id);
    expect(get.stdout).toMatch(/^source: journey "Hooked" node send$/m);
  });

  it("segments members NAME and users list --segment show when each member entered", async () => {
    // The engine makes the members within about a second of the segment's creation.
    let members = "";
    for (let i = 0; i < 50 && !/bob/.test(members); i++) {
      members = (await cli("segments", "members", "Pro")).stdout;
      if (!/bob/.test(members)) await new Promise((r) => setTimeout(r, 200));
    }
    expect(members).toMatch(/^USER ID\s+ENTERED$/m);
    expect(members).toMatch(/^ada\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    expect(members).toMatch(/^bob\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/m);
    const json = JSON.parse((await cli("segments", "members", "Pro", "--json")).stdout) as {
      items: { userId: string; enteredAt: number }[];
    };
    expect(json.items.map((u) => u.userId)).toEqual(["ada", "bob"]);
    expect(json.items[0]!.enteredAt).toBeGreaterThan(Date.now() - 600_000);
    const searched = JSON.parse((await cli("segments", "members", "Pro", "--search", "BO", "--json")).stdout) as {
      items: { userId: string }[];
    };
    expect(searched.items.map((u) => u.userId)).toEqual(["bob"]);

    const users = await cli("users", "list", "--segment", "Pro");
    expect(users.stdout).toMatch(/^USER ID\s+ENTERED\s+FIRST SEEN\s+TRAITS$/m);
    expect(users.stdout).toMatch(/^ada\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d{4}-/m);
    const usersJson = JSON.parse((await cli("users", "list", "--segment", "Pro", "--json")).stdout) as { items: { enteredAt?: number }[] };
    expect(usersJson.items[0]!.enteredAt).toBe(json.items[0]!.enteredAt);
    // Without --segment there is no ENTERED column.
    expect((await cli("users", "list")).stdout).toMatch(/^USER ID\s+FIRST SEEN\s+TRAITS$/m);

    const missing = await cli("segments", "members", "No such segment");
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('no segment named "No such segment"');
  });
});
