// The broadcasts' gauge.
import type pg from "pg";
import client from "prom-client";

export function registerBroadcastGauge(registry: client.Registry, pool: Pick<pg.Pool, "query">) {
  new client.Gauge({
    name: "tidings_broadcasts_in_progress",
    help: "Broadcasts queued or running",
    registers: [registry],
    async collect() {
      const counted = pool.query<{ n: number }>("SELECT count(*)::int AS n FROM broadcasts WHERE status IN ('Queued', 'Running')");
      this.set(await counted.then((r) => r.rows[0]!.n).catch(() => Number.NaN));
    },
  });
}
