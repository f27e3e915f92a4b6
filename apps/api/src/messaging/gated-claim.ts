// A claim that passes the delivery policies' gate: in one transaction, the claim and the users'
// decisions (taken under their locks, policies/gate.ts) are committed together; held and skipped
// rows are not handed to the senders (and are tallied).
import type pg from "pg";
import { inTransaction } from "../db/transaction.ts";
import type { Gatekeeper, Policies } from "../policies/index.ts";
import { sql } from "../db/sql.ts";
import { type Claimed, type ClaimSpec, claimDeliveries } from "./claims.ts";
import { addTallies } from "./tallies.ts";

export async function claimPastGate(pool: pg.Pool, gatekeeper: Gatekeeper, spec: ClaimSpec, policies: Policies) {
  const client = await pool.connect();
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
  } finally {
    client.release();
  }
}

/** Tallies the rows the gate held (Deferred) or skipped, out of Sending (tallies.ts), in the claim's transaction. */
function tallyGated(client: pg.PoolClient, workspaceId: string, gated: Claimed[]) {
  return client.query(
    addTallies(sql`SELECT workspace_id, broadcast_id, 'Sending' AS old_status, status::text AS new_status FROM deliveries
       WHERE workspace_id = ${workspaceId}::uuid AND id = ANY(${gated.map((c) => c.id)}::uuid[])`),
  );
}
