// Group commit: concurrent ingest calls share transactions, and each resolves only after its
// events are committed.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ingestor } from "../../src/ingest/ingestor.ts";
import { normalizeEvent } from "../../src/ingest/normalize.ts";
import { createTestApp, type TestApp } from "../support/app.ts";

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
});

const track = (userId: string) =>
  normalizeEvent({ type: "track", userId, event: "Clicked", messageId: randomUUID() }, "track", {}, new Date(), 32768, "(body)");

describe("Ingestor", () => {
  it("commits 200 concurrent requests in a handful of transactions", async () => {
    let commits = 0;
    const ingestor = new Ingestor(t.ctx.db.pool, {
      maxConcurrentCommits: 2,
      maxEventsPerCommit: 5000,
      maxQueuedEvents: 10_000,
      onCommit: () => commits++,
    });
    const events = Array.from({ length: 200 }, (_, i) => track(`gc-${i}`));
    const acked: string[] = [];
    await Promise.all(
      events.map((ev) =>
        ingestor.ingest(t.workspace.id, [ev]).then(async () => {
          // Acknowledged means committed: the row is visible to another connection now.
          const { rows } = await t.ctx.db.pool.query("SELECT 1 FROM events WHERE workspace_id = $1 AND message_id = $2", [t.workspace.id, ev.messageId]);
          expect(rows).toHaveLength(1);
          acked.push(ev.messageId);
        }),
      ),
    );
    expect(acked).toHaveLength(200);
    expect(commits).toBeLessThanOrEqual(4);
    await ingestor.close();
  });

  it("refuses work beyond its queue bound with 503 and after close", async () => {
    const ingestor = new Ingestor(t.ctx.db.pool, { maxConcurrentCommits: 1, maxEventsPerCommit: 10, maxQueuedEvents: 5 });
    const first = ingestor.ingest(t.workspace.id, [track("q1")]);
    await expect(ingestor.ingest(t.workspace.id, Array.from({ length: 6 }, () => track("q2")))).rejects.toMatchObject({
      code: "UNAVAILABLE",
      headers: { "retry-after": "1" },
    });
    await first;
    await ingestor.close();
    await expect(ingestor.ingest(t.workspace.id, [track("q3")])).rejects.toMatchObject({ code: "UNAVAILABLE" });
  });
});
