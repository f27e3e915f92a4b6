// What the two tiers of a drain applied (src/segments/engine/drain-progress.ts): a row is deleted
// once both applied it, and neither applies it again meanwhile, nor while its delete commits; the
// ids a row resolved to are kept for the other tier while the row waits.
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../src/auth/service.ts";
import { createDb } from "../../src/db/client.ts";
import { DrainProgress, type DrainedRow } from "../../src/segments/engine/drain-progress.ts";
import { createTestDatabase } from "../support/app.ts";

const row = (id: string): DrainedRow => ({ id, ids: ["ann"], keys: ["t:plan"], track_ids: [], created_at: new Date() });

describe("a drain's progress", () => {
  it("skips a row in the tier that applied it, and in both while it is deleted, until its delete commits", () => {
    const progress = new DrainProgress();
    const [a, b] = [row("1"), row("2")];
    expect(progress.mark("events", [a, b])).toEqual([]);
    expect({ events: progress.doneBy("events"), profiles: progress.doneBy("profiles") }).toEqual({ events: ["1", "2"], profiles: [] });
    // The profiles tier applies `a`: done by both, to delete. Until the delete commits, neither
    // tier's next read takes it (a read between would apply it again).
    expect(progress.mark("profiles", [a])).toEqual([a]);
    expect({ events: progress.doneBy("events").sort(), profiles: progress.doneBy("profiles") }).toEqual({
      events: ["1", "2"],
      profiles: ["1"],
    });
    progress.removed([a]);
    expect({ events: progress.doneBy("events"), profiles: progress.doneBy("profiles") }).toEqual({ events: ["2"], profiles: [] });
    expect(progress.drained).toBe(1);
  });

  it("keeps a row's resolved ids from the first tier that read it for the other, and forgets them once both applied it", () => {
    const progress = new DrainProgress();
    const [a, b] = [row("1"), row("2")];
    const resolution = { ids: ["ann", "ann-profile"], created: ["ann"] };
    progress.resolved(a.id, resolution);
    progress.resolved(b.id, { ids: ["ann"], created: [] });
    progress.mark("profiles", [a, b]);
    // The events tier reads both rows next: it finds them resolved.
    expect(progress.resolution(a.id)).toEqual(resolution);
    expect(progress.mark("events", [a])).toEqual([a]);
    expect(progress.resolution(a.id)).toBeUndefined();
    expect(progress.resolution(b.id)).toEqual({ ids: ["ann"], created: [] });
  });

  it("forgets, as a refresh ends, the resolution of a row no longer waiting (another process drained it)", async () => {
    const db = createDb(await createTestDatabase(), 1);
    try {
      const ws = (await createWorkspace(db.prisma, "progress-prune")).workspace.id;
      const { rows } = await db.pool.query<{ id: string }>(
        "INSERT INTO segment_outbox (workspace_id, ids, keys) VALUES ($1, '{ann}', '{t:plan}'), ($1, '{bob}', '{t:plan}') RETURNING id",
        [ws],
      );
      const [a, b] = rows.map((r) => row(r.id));
      const progress = new DrainProgress();
      progress.resolved(a!.id, { ids: ["ann"], created: [] });
      progress.resolved(b!.id, { ids: ["bob"], created: [] });
      progress.mark("profiles", [a!, b!]);
      await db.pool.query("DELETE FROM segment_outbox WHERE id = $1", [a!.id]);
      expect(await progress.prune(db.pool, ws)).toBe(true);
      expect(progress.resolution(a!.id)).toBeUndefined();
      expect(progress.resolution(b!.id)).toEqual({ ids: ["bob"], created: [] });
    } finally {
      await db.close();
    }
  });
});
