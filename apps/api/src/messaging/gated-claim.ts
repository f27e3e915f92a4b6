// A claim that passes the delivery policies' gate: in one transaction, the claim and the users'
// decisions (taken under their locks, policies/gate.ts) are committed together; held and skipped
// rows are not handed to the senders (and are tallied). A chunk is claimed GATED_CLAIM rows per
// transaction: each user's lock is an entry of PostgreSQL's shared lock table, which holds about
// 12 000 at its defaults for the whole server (max_locks_per_transaction × connections), and is
// what every other workspace's locks are taken in too. Eight senders deciding chunks of 2 000
// users at once would fill it ("out of shared memory"); at 250 a sender, they take 2 000.
import type pg from "pg";
import { inTransaction } from "../db/transaction.ts";
import type { Gatekeeper, Policies } from "../policies/index.ts";
import { sql } from "../db/sql.ts";
import { type Claimed, type ClaimSpec, claimDeliveries } from "./claims.ts";
import { addTallies } from "./tallies.ts";

/** Rows (so users, at most) decided per transaction. */
export const GATED_CLAIM = 250;

/**
 * Claims up to `spec.limit` rows past the gate, GATED_CLAIM per transaction, until one claim finds
 * fewer due. A part that fails after others committed (a lost connection, a database restart)
 * ends the claim with what they took, `failed` told: those rows are Sending, and left unsent they
 * would wait out their lease.
 */
export async function claimPastGate(
  pool: pg.Pool,
  gatekeeper: Gatekeeper,
  spec: ClaimSpec,
  policies: Policies,
  failed: (err: unknown) => void,
): Promise<Claim> {
  const all: Claim = { picked: 0, skipped: [], toSend: [], ids: [] };
  while (all.picked < spec.limit) {
    const limit = Math.min(GATED_CLAIM, spec.limit - all.picked);
    let claim: Claim;
    try {
      claim = await claimPart(pool, gatekeeper, { ...spec, limit }, policies);
    } catch (err) {
      if (all.picked === 0) throw err;
      failed(err);
      break;
    }
    all.picked += claim.picked;
    all.skipped.push(...claim.skipped);
    all.toSend.push(...claim.toSend);
    all.ids.push(...claim.ids);
    if (claim.picked < limit) break;
  }
  return all;
}

type Claim = Awaited<ReturnType<typeof claimDeliveries>>;

async function claimPart(pool: pg.Pool, gatekeeper: Gatekeeper, spec: ClaimSpec, policies: Policies): Promise<Claim> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await inTransaction(client, async () => {
      const claim = await claimDeliveries(client, spec);
      if (claim.toSend.length === 0) return claim;
      const { send } = await gatekeeper.pass(client, spec.workspaceId, policies, claim.toSend);
      // The rows that go carry the zone the rules used (recorded when they are marked).
      const toSend = claim.toSend.filter((c) => {
        const zone = send.get(c.id);
        if (zone) Object.assign(c, zone);
        return zone !== undefined;
      });
      if (toSend.length < claim.toSend.length)
        await tallyGated(
          client,
          spec.workspaceId,
          claim.toSend.filter((c) => !send.has(c.id)),
        );
      return { ...claim, toSend };
    });
  } catch (err) {
    broken = err as Error; // the connection may be gone: not back to the pool
    throw err;
  } finally {
    client.release(broken);
  }
}

/** Tallies the rows the gate held (Deferred) or skipped, out of Sending (tallies.ts), in the claim's transaction. */
function tallyGated(client: pg.PoolClient, workspaceId: string, gated: Claimed[]) {
  return client.query(
    addTallies(sql`SELECT workspace_id, broadcast_id, 'Sending' AS old_status, status::text AS new_status FROM deliveries
       WHERE workspace_id = ${workspaceId}::uuid AND id = ANY(${gated.map((c) => c.id)}::uuid[])`),
  );
}
