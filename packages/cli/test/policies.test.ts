// Delivery policies from the CLI: `kind: Policies` in apply files (checked at its line, written
// with the other resources, unchanged on a second apply), `tidings policies` as tables and as the
// document apply takes, and deferred messages in `deliveries list --status deferred`.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { adminGet, newWorkspace, runCli, tempDir, type Workspace } from "./support/cli.js";

const POLICIES = `kind: Policies
defaultTimezone: America/New_York
frequencyCaps:
  - { name: one a day, limit: 1, window: { days: 1 } }
sendWindows:
  - { name: daytime sms, channel: Sms, from: "09:00", to: "21:00" }
providerRates:
  - { provider: Twilio, perSecond: 1 }
`;

describe("tidings policies", () => {
  let ws: Workspace;
  const cli = (...args: string[]) => runCli(args, { env: ws.env });
  const write = (name: string, text: string) => {
    const dir = tempDir("policies");
    writeFileSync(path.join(dir, name), text);
    return dir;
  };
  beforeAll(async () => {
    ws = await newWorkspace("cli-policies");
  });

  it("applies a Policies document, shows it as tables, and writes it back as the same document", async () => {
    const applied = await cli("apply", "-f", write("p.yaml", POLICIES));
    expect(applied.status, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/^Policies\s+policies\s+[0-9a-f-]{36}\s+created/m);

    const shown = await cli("policies");
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^CAP\s+LIMIT\s+PER\s+SCOPE\s+OVER IT$/m);
    expect(shown.stdout).toMatch(/^one a day\s+1\s+1 day \(local\)\s+every channel, every category but transactional\s+defer$/m);
    expect(shown.stdout).toMatch(/^daytime sms\s+09:00–21:00\s+every day\s+Sms, every category but transactional\s+defer$/m);
    expect(shown.stdout).toMatch(/^Twilio\s+1\s+1$/m);
    expect(shown.stdout).toContain("held at most: 72 h, then skipped");
    expect(shown.stdout).toContain("users without a timezone trait: America/New_York");

    const yaml = await cli("policies", "-o", "yaml");
    expect(yaml.stdout).toMatch(/^kind: Policies$/m);
    const again = await cli("apply", "-f", write("back.yaml", yaml.stdout));
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain("0 created, 0 updated, 1 unchanged");
  });

  it("reports a mistake in the document at its line, and sends nothing", async () => {
    const res = await cli(
      "apply",
      "-f",
      write("bad.yaml", "kind: Policies\nfrequencyCaps:\n  - { name: c, limit: 0, window: { dayz: 1 } }\n"),
    );
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/bad\.yaml:3:\d+: frequencyCaps\.0\.limit: /);
    expect(res.stderr).toMatch(/bad\.yaml:3:\d+: frequencyCaps\.0\.window\.dayz: unknown field "dayz" \(did you mean "days"\?\)/);
    const stored = await adminGet<{ frequencyCaps: { name: string }[] }>(ws, "/api/admin/policies");
    expect(stored.frequencyCaps.map((c) => c.name)).toEqual(["one a day"]);
  });

  it("lists what waits: deliveries list --status deferred, with the rule and when it may go", async () => {
    const sent = await cli(
      "events",
      "send",
      "--type",
      "identify",
      "--user-id",
      "ann",
      "--traits",
      JSON.stringify({ plan: "pro", email: "ann@example.com" }),
    );
    expect(sent.status, sent.stderr).toBe(0);
    const dir = tempDir("policies-broadcast");
    writeFileSync(
      path.join(dir, "segment.yaml"),
      "entryNode: { type: Trait, id: p, path: plan, operator: { type: Equals, value: pro } }\n",
    );
    writeFileSync(path.join(dir, "template.yaml"), "type: Email\nfrom: hello@acme.test\nsubject: Hi\nbody: <p>Hi</p>\n");
    for (const name of ["first", "second"]) {
      const run = await cli(
        "broadcasts",
        "execute",
        "--name",
        name,
        "--segment",
        path.join(dir, "segment.yaml"),
        "--template",
        path.join(dir, "template.yaml"),
      );
      expect(run.status, run.stderr).toBe(0);
    }
    let list = await cli("deliveries", "list", "--status", "deferred");
    for (let i = 0; i < 50 && !/Deferred/.test(list.stdout); i++) {
      await new Promise((r) => setTimeout(r, 200));
      list = await cli("deliveries", "list", "--status", "deferred");
    }
    expect(list.status, list.stderr).toBe(0);
    // Email goes through the embedded Log provider: the first is Sent, the second waits for tomorrow.
    expect(list.stdout).toMatch(
      /\s+ann\s+Email\s+Deferred\s+0\s+broadcast "(first|second)"\s+held: frequency cap "one a day" \(1 per 1 day\) reached; room at /,
    );
  });
});
