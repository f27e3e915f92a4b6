// A claimed chunk's lease while its sender works (claims.ts claims, marks.ts renews and marks).
// It is renewed every third of its length. A renewal that comes too late (a stalled process, a
// database away for longer than the lease) may find rows another sender has claimed since: those
// are lost to this sender, which neither sends nor marks them. And a sender hands a slice to its
// provider only while the lease is known to hold (renewed less than half its length ago), else it
// renews first: after the lease may have run out, nothing goes out before the sender knows which
// rows are still its own. What was already in flight then is the one resend, under the same id.
import type pg from "pg";
import type { JobLog } from "../jobs/index.ts";
import { errorText } from "../lib/errors.ts";
import { retryFor } from "../lib/time.ts";
import { renewLeases } from "./marks.ts";

export class ChunkLease {
  /** Ids of rows claimed since by another sender. */
  readonly lost = new Set<string>();
  /** When the last renewal that succeeded began (the claim's start, at first). */
  private renewedAt: number;
  private renewing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private o: {
      pool: pg.Pool;
      workspaceId: string;
      /** The claimed rows this sender sends: each id with the attempt its claim counted. */
      rows: { id: string; attempts: number }[];
      leaseSeconds: number;
      log: JobLog;
    },
    claimedAt: number,
  ) {
    this.renewedAt = claimedAt;
    this.timer = setInterval(
      () => this.renew().catch((err) => o.log("warn", `renewing delivery leases failed: ${errorText(err)}`)),
      (o.leaseSeconds * 1000) / 3,
    );
  }

  /** Stops renewing (every row is marked, or the chunk failed). */
  stop() {
    clearInterval(this.timer);
  }

  /**
   * Stops renewing and waits for a renewal under way, before the chunk's mark: a renewal that
   * commits while the mark waits for its rows' locks gives them versions the mark's update, which
   * finds its rows by ctid under its own snapshot, cannot see (marks.ts): the mark would return
   * with those rows still Sending, to be sent again after the lease.
   */
  async settle() {
    this.stop();
    await this.renewing?.catch(() => {});
  }

  /** Renews the rows still held; one renewal at a time (a timer's and a `hold`'s share it). */
  private renew(): Promise<void> {
    this.renewing ??= (async () => {
      const began = performance.now();
      const held = this.o.rows.filter((r) => !this.lost.has(r.id));
      const renewed = new Set(await renewLeases(this.o.pool, this.o.workspaceId, held));
      for (const r of held) if (!renewed.has(r.id)) this.lost.add(r.id);
      this.renewedAt = began;
    })().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  /**
   * Returns once the lease is known to hold: renewed less than half its length ago, or renewed
   * now. While the database does not answer it tries again, for up to twice the lease; then it
   * throws (the rows not yet sent stay Sending and are claimed again after the lease).
   */
  async hold() {
    const stale = () => performance.now() - this.renewedAt >= (this.o.leaseSeconds * 1000) / 2;
    if (!stale()) return;
    await retryFor(
      this.o.leaseSeconds * 2000,
      async () => {
        while (stale()) await this.renew();
      },
      (err) => this.o.log("warn", `renewing delivery leases before sending failed (${errorText(err)}); trying again`),
    );
  }
}
