// `tidings events import`: a 100 000-line NDJSON file is stored once — also when the same file is
// imported again, and when an import killed mid-way is run again; rejected lines are reported
// with their line numbers.
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, countEvents, newWorkspace, runCli, tempDir } from "./support/cli.js";

const LINES = 100_000;

/** 100 000 events, 10 % identify; every 7th line carries its own messageId, the rest get derived ones. */
function writeEvents(file: string) {
  const lines: string[] = [];
  for (let i = 0; i < LINES; i++) {
    const userId = `user-${i % 5000}`;
    const event =
      i % 10 === 0
        ? { type: "identify", userId, traits: { email: `${userId}@example.com`, plan: i % 3 ? "free" : "pro" } }
        : { type: "track", userId, event: "Item Viewed", properties: { sku: `sku-${i % 977}`, price: i % 100 } };
    lines.push(JSON.stringify(i % 7 === 0 ? { ...event, messageId: `own-${i}` } : event));
  }
  writeFileSync(file, `${lines.join("\n")}\n`);
}

interface Summary {
  records: number;
  accepted: number;
  rejected: number;
  rejectedLines: { line: number; message: string }[];
  eventsPerSecond: number;
  complete: boolean;
}

describe("tidings events import", () => {
  let file: string;
  let dir: string;

  beforeAll(() => {
    dir = tempDir("import");
    file = path.join(dir, "events.ndjson");
    writeEvents(file);
  });

  it("imports 100 000 lines, each stored once, and a second run stores nothing twice", async () => {
    const ws = await newWorkspace("import");
    const first = await runCli(["events", "import", file, "--json"], { env: ws.env });
    expect(first.status, first.stderr).toBe(0);
    const summary = JSON.parse(first.stdout) as Summary;
    expect(summary).toMatchObject({ records: LINES, accepted: LINES, rejected: 0, complete: true });
    // Progress went to stderr (plain lines: not a terminal), ending with the full count.
    expect(first.stderr.trim().split("\n").at(-1)).toMatch(
      new RegExp(`100%\\s+${LINES} read · ${LINES} accepted · 0 rejected · \\d+ events/s$`),
    );
    expect(await countEvents(ws)).toEqual({ total: LINES, distinct: LINES });

    const second = await runCli(["events", "import", file], { env: ws.env });
    expect(second.status).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`^Imported .*events\\.ndjson: ${LINES} records, ${LINES} accepted, 0 rejected \\(`));
    expect(await countEvents(ws)).toEqual({ total: LINES, distinct: LINES });
  }, 300_000);

  it("finishes an import killed mid-way when run again, storing every event once", async () => {
    const ws = await newWorkspace("import-killed");
    // Small, sequential batches so it is surely mid-way when the first progress report shows events stored.
    let child: ChildProcess | undefined;
    const killed = await runCli(["events", "import", file, "--batch-size", "100", "--concurrency", "1"], {
      env: ws.env,
      onSpawn: (c) => {
        child = c;
        c.stderr!.on("data", (chunk: Buffer) => {
          if (/ [1-9]\d* accepted/.test(chunk.toString())) c.kill("SIGKILL");
        });
      },
    });
    expect(child).toBeDefined();
    expect(killed.signal).toBe("SIGKILL");
    const partial = await countEvents(ws);
    expect(partial.total).toBeGreaterThan(0);
    expect(partial.total).toBeLessThan(LINES);

    const again = await runCli(["events", "import", file, "--json"], { env: ws.env });
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ records: LINES, accepted: LINES, rejected: 0 });
    expect(await countEvents(ws)).toEqual({ total: LINES, distinct: LINES });
  }, 300_000);

  it("reports rejected NDJSON lines with their line numbers and stores the others (exit 1)", async () => {
    const ws = await newWorkspace("import-rejects");
    const small = path.join(dir, "mixed.ndjson");
    writeFileSync(
      small,
      [
        JSON.stringify({ type: "track", userId: "a", event: "One" }),
        JSON.stringify({ type: "identify", userId: "a", traits: { plan: "pro" } }),
        '{"type":"track", "userId":',
        "",
        JSON.stringify({ type: "track", event: "No user" }),
        JSON.stringify({ userId: "b", event: "No type" }),
        JSON.stringify({ type: "track", userId: "b", event: "Two" }),
      ].join("\n"),
    );
    const res = await runCli(["events", "import", small], { env: ws.env });
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/: 6 records, 3 accepted, 3 rejected/);
    expect(res.stdout).toMatch(/^ {2}line 3: invalid JSON/m);
    expect(res.stdout).toMatch(/^ {2}line 5: userId: userId or anonymousId is required$/m);
    expect(res.stdout).toMatch(/^ {2}line 6: type: /m);
    expect(res.stderr).toMatch(/^error: 3 lines rejected$/m);
    expect(await countEvents(ws)).toEqual({ total: 3, distinct: 3 });

    // --type fills in the missing type; the lines already stored are not stored again.
    const fixed = await runCli(["events", "import", small, "--type", "track", "--json"], { env: ws.env });
    const summary = JSON.parse(fixed.stdout) as Summary;
    expect(summary.rejectedLines.map((r) => r.line)).toEqual([3, 5]);
    expect(await countEvents(ws)).toEqual({ total: 4, distinct: 4 });
  });

  it("imports CSV: header columns, dotted and JSON columns, quoted cells over several lines", async () => {
    const ws = await newWorkspace("import-csv");
    const csv = path.join(dir, "people.csv");
    writeFileSync(
      csv,
      [
        "type,userId,event,traits.email,traits.plan,properties.seats,properties.note,context",
        "identify,carol,,carol@example.com,pro,,,",
        'track,carol,Seat Added,,,3,"two lines,\nwith a comma",{"ip":"10.0.0.1"}',
        "track,dave,Seat Added,,,1,,,extra,cells",
        'track,dave,Seat Added,,,007,"say ""hi""",',
      ].join("\r\n"),
    );
    const res = await runCli(["events", "import", csv, "--json"], { env: ws.env });
    expect(res.status).toBe(1);
    const summary = JSON.parse(res.stdout) as Summary;
    expect(summary).toMatchObject({ records: 4, accepted: 3 });
    expect(summary.rejectedLines).toEqual([{ line: 5, message: "10 cells but the header names 8 columns" }]);

    const events = await adminGet<{ items: { payload: Record<string, unknown> }[] }>(ws, "/api/admin/events?limit=10");
    const payloads = events.items.map((e) => e.payload);
    expect(payloads).toContainEqual(
      expect.objectContaining({ type: "identify", userId: "carol", traits: { email: "carol@example.com", plan: "pro" } }),
    );
    expect(payloads).toContainEqual(
      expect.objectContaining({
        userId: "carol",
        event: "Seat Added",
        properties: { seats: 3, note: "two lines,\nwith a comma" },
        context: expect.objectContaining({ ip: "10.0.0.1" }),
      }),
    );
    expect(payloads).toContainEqual(expect.objectContaining({ userId: "dave", properties: { seats: "007", note: 'say "hi"' } }));
  });

  it("refuses a CSV header naming __proto__, constructor or prototype (exit 2, nothing sent, nothing polluted)", async () => {
    const ws = await newWorkspace("import-proto");
    const csv = path.join(dir, "proto.csv");
    writeFileSync(csv, ["type,userId,__proto__.polluted,traits.constructor.x", "identify,eve,yes,1"].join("\n"));
    const res = await runCli(["events", "import", csv], { env: ws.env });
    expect(res.status, res.stderr).toBe(2);
    expect(res.stderr).toContain("the CSV header names keys an event may not have");
    expect(res.stderr).toContain('column "__proto__.polluted"');
    expect(res.stderr).toContain('column "traits.constructor.x"');
    expect(await countEvents(ws)).toEqual({ total: 0, distinct: 0 });
  });

  it("needs a write key and a known format (exit 2, nothing sent)", async () => {
    const ws = await newWorkspace("import-usage");
    const noKey = await runCli(["events", "import", file], { env: { TIDINGS_HOST: ws.host, TIDINGS_API_KEY: ws.apiKey } });
    expect(noKey.status).toBe(2);
    expect(noKey.stderr).toMatch(/no write key/);
    const txt = path.join(dir, "events.txt");
    writeFileSync(txt, "{}\n");
    const unknown = await runCli(["events", "import", txt], { env: ws.env });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/cannot tell the format/);
    const missing = await runCli(["events", "import", path.join(dir, "nope.ndjson")], { env: ws.env });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/nope\.ndjson: no such file/);
  });
});
