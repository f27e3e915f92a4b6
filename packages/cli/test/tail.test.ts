// `tidings deliveries tail` and `tidings events tail` (issue 21, item 3), run as subprocesses of
// the built binary while the test sends through the CLI: what is sent shows up as rendered (no
// provider: Log), and an event's unknown field (`trait` for `traits`) is pointed out.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type CliResult, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";
import { startProxy } from "./support/proxy.js";

let ws: Workspace;
beforeAll(async () => {
  ws = await newWorkspace("tail");
});

/**
 * Starts a tail and resolves once it is following (its "Waiting for …" note), with its result to
 * come (wrapped: an async function would wait for a returned promise). A tail still running after
 * `killAfterMs` is killed (its status is then null).
 */
async function startTail(args: string[], w: Workspace = ws, killAfterMs = 90_000): Promise<{ done: Promise<CliResult> }> {
  let ready!: () => void;
  const following = new Promise<void>((resolve) => (ready = resolve));
  let timer: NodeJS.Timeout | undefined;
  const done = runCli(args, {
    env: w.env,
    onSpawn: (child) => {
      child.stderr?.on("data", (d: Buffer) => d.toString().includes("Waiting for") && ready());
      timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    },
  }).finally(() => clearTimeout(timer));
  await Promise.race([following, done.then((r) => Promise.reject(new Error(`the tail ended early: ${r.stderr}`)))]);
  return { done };
}

/** Sends events in one batch request with the workspace's write key (as a Segment library would). */
async function sendBatch(w: Workspace, batch: Record<string, unknown>[]) {
  const res = await fetch(new URL("/v1/batch", w.host), {
    method: "POST",
    headers: { authorization: `Basic ${Buffer.from(`${w.writeKey}:`).toString("base64")}`, "content-type": "application/json" },
    body: JSON.stringify({ batch }),
  });
  expect(res.ok, await res.text()).toBe(true);
}

describe("tidings deliveries tail", () => {
  it("prints each new delivery once settled, with its contact point and the message as rendered", async () => {
    for (const [userId, name] of [
      ["ada", "Ada"],
      ["bob", "Bob"],
    ] as const) {
      const sent = await runCli(
        [
          "events",
          "send",
          "--type",
          "identify",
          "--user-id",
          userId,
          "--traits",
          JSON.stringify({ firstName: name, phone: `+1555000${name.length}${userId}` }),
        ],
        { env: ws.env },
      );
      expect(sent.status).toBe(0);
    }
    const dir = tempDir("tail-resources");
    writeFileSync(
      path.join(dir, "r.yaml"),
      `kind: Segment
name: Has phone
definition: { entryNode: { type: Trait, id: p, path: phone, operator: { type: Exists } } }
---
kind: Template
name: Hello SMS
definition: { type: Sms, body: "Hello {{ user.firstName }}" }
`,
    );
    expect((await runCli(["apply", "-f", dir], { env: ws.env })).status).toBe(0);
    // Both identifies committed and in the segment before the broadcast starts.
    for (let i = 0; i < 50; i++) {
      const members = await runCli(["users", "list", "--segment", "Has phone", "--json"], { env: ws.env });
      if ((JSON.parse(members.stdout) as { items: unknown[] }).items.length === 2) break;
      await new Promise((r) => setTimeout(r, 200));
    }

    const tail = await startTail(["deliveries", "tail", "--count", "2", "--interval", "200"]);
    const run = await runCli(
      ["broadcasts", "execute", "--name", "tail-hello", "--segment-id", "Has phone", "--template-id", "Hello SMS", "--wait"],
      {
        env: ws.env,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const res = await tail.done;
    expect(res.status, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split("\n");
    expect(
      lines.filter((l) =>
        /^\S+ \S+ {2}Sent {5}Sms {2}user (ada|bob) → \+1555000\d(ada|bob) {2}broadcast "tail-hello" {2}template "Hello SMS"$/.test(l),
      ),
    ).toHaveLength(2);
    expect(res.stdout).toContain("    body: Hello Ada\n");
    expect(res.stdout).toContain("    body: Hello Bob\n");
  });

  it("--json prints one delivery per line, with contact and rendered", async () => {
    const tail = await startTail(["deliveries", "tail", "--count", "1", "--interval", "200", "--json"]);
    const run = await runCli(
      ["broadcasts", "execute", "--name", "tail-json", "--segment-id", "Has phone", "--template-id", "Hello SMS", "--wait"],
      { env: ws.env },
    );
    expect(run.status, run.stderr).toBe(0);
    const res = await tail.done;
    expect(res.status, res.stderr).toBe(0);
    // --count 1: one delivery, though both may settle between two polls.
    expect(res.stdout.trimEnd().split("\n")).toHaveLength(1);
    const first = JSON.parse(res.stdout.split("\n")[0]!) as { status: string; contact: string; rendered: { body: string } };
    expect(first).toMatchObject({
      status: "Sent",
      contact: expect.stringMatching(/^\+1555000/),
      rendered: { body: expect.stringMatching(/^Hello (Ada|Bob)$/) },
    });
  });
});

describe("tidings deliveries tail: what it shows, and a server that goes away", () => {
  it("--since shows deliveries created before it started; without it, only what is created after", async () => {
    const since = await startTail(["deliveries", "tail", "--since", "1h", "--count", "2", "--interval", "200"]);
    const res = await since.done;
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.match(/ {2}Sent {5}Sms {2}user (ada|bob) /g)).toHaveLength(2);
    // Without --since the same deliveries are not new: nothing within a few polls.
    const plain = await startTail(["deliveries", "tail", "--count", "1", "--interval", "200"], ws, 1500);
    const after = await plain.done;
    expect(after.status).toBeNull(); // still waiting when killed
    expect(after.stdout).toBe("");
  });

  it("deliveries list shows each delivery's source by name", async () => {
    const res = await runCli(["deliveries", "list", "--broadcast", "tail-hello"], { env: ws.env });
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^CREATED\s+ID\s+USER\s+CHANNEL\s+STATUS\s+ATTEMPTS\s+SOURCE\s+REASON$/m);
    expect(res.stdout.match(/ broadcast "tail-hello"/g)).toHaveLength(2);
  });

  it("says when the server goes away, reconnects by itself when it is back, and misses nothing", async () => {
    const proxy = await startProxy(ws.host, () => undefined);
    try {
      const tail = await startTail(["deliveries", "tail", "--count", "2", "--interval", "200"], {
        ...ws,
        env: { ...ws.env, TIDINGS_HOST: proxy.url },
      });
      await proxy.down();
      await new Promise((r) => setTimeout(r, 1500));
      // Sent while the tail cannot reach the server.
      const run = await runCli(
        ["broadcasts", "execute", "--name", "tail-outage", "--segment-id", "Has phone", "--template-id", "Hello SMS", "--wait"],
        { env: ws.env },
      );
      expect(run.status, run.stderr).toBe(0);
      await proxy.up();
      const res = await tail.done;
      expect(res.status, res.stderr).toBe(0);
      expect(res.stderr).toMatch(/^lost the server \(.+\); reconnecting… \(Ctrl-C to stop\)$/m);
      expect(res.stderr).toMatch(/^reconnected; following again \(nothing was missed\)$/m);
      expect(res.stdout.match(/ broadcast "tail-outage" /g)).toHaveLength(2);
    } finally {
      await proxy.close().catch(() => {});
    }
  });
});

describe("tidings events tail", () => {
  it("prints each new event with its payload, and flags a field its type does not know (trait → traits)", async () => {
    const tail = await startTail(["events", "tail", "--count", "1", "--interval", "200"]);
    const sent = await runCli(["events", "send", "--data", '{"type":"identify","userId":"typo-user","trait":{"plan":"pro"}}'], {
      env: ws.env,
    });
    expect(sent.status, sent.stderr).toBe(0);
    const res = await tail.done;
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^\S+ \S+ {2}identify {2}typo-user {2}\S+$/m);
    expect(res.stdout).toContain('    ! unknown field "trait" (did you mean "traits"?): stored, but nothing reads it\n');
    expect(res.stdout).toMatch(/^ {4}trait:\n {6}plan: pro$/m);
  });

  it("follows the order events are received in: an event timestamped a year ago (an import) shows", async () => {
    // More than a page (500) of events with recent timestamps: the old event is not among the newest by time.
    const busy = await newWorkspace("tail-import");
    await sendBatch(
      busy,
      Array.from({ length: 600 }, (_, i) => ({ type: "track", userId: `u${i}`, event: "Recent" })),
    );
    const tail = await startTail(["events", "tail", "--count", "1", "--interval", "200", "--json"], busy, 30_000);
    const yearAgo = Date.now() - 365 * 86_400_000;
    const event = { type: "track", userId: "importer", event: "Old Order", timestamp: new Date(yearAgo).toISOString() };
    const sent = await runCli(["events", "send", "--data", JSON.stringify(event)], { env: busy.env });
    expect(sent.status, sent.stderr).toBe(0);
    const res = await tail.done;
    expect(res.status, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    const shown = JSON.parse(lines[0]!) as { event: string; timestamp: number; receivedAt: number };
    expect(shown).toMatchObject({ event: "Old Order", timestamp: yearAgo });
    expect(shown.receivedAt).toBeGreaterThan(Date.now() - 60_000);
  });

  it("--count stops at that many although more arrived in one poll; events from before the start are not shown", async () => {
    const before = await runCli(["events", "send", "--data", '{"type":"track","userId":"early","event":"Before Start"}'], { env: ws.env });
    expect(before.status, before.stderr).toBe(0);
    // One batch between two polls (a long interval): three events arrive at once.
    const tail = await startTail(["events", "tail", "--count", "2", "--interval", "3000"]);
    await sendBatch(
      ws,
      [1, 2, 3].map((n) => ({ type: "track", userId: "burst", event: `Burst ${n}`, messageId: `burst-${n}-${Date.now()}` })),
    );
    const res = await tail.done;
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout.match(/^\S+ \S+ {2}track {5}burst {2}"Burst \d"/gm)).toEqual([
      expect.stringContaining('"Burst 1"'),
      expect.stringContaining('"Burst 2"'),
    ]);
    expect(res.stdout).not.toContain("Before Start");
  });
});
