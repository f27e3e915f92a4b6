// The outbox's gauge: how long the oldest pending change has waited.
import type pg from "pg";
import client from "prom-client";
import { oldestChangeAge } from "./table.ts";

export function registerOutboxGauge(registry: client.Registry, pool: Pick<pg.Pool, "query">) {
  new client.Gauge({
    name: "tidings_segment_outbox_oldest_age_seconds",
    help: "Seconds since the oldest change still waiting for the segment engine was committed; 0 when none",
    registers: [registry],
    async collect() {
      this.set(await oldestChangeAge(pool).catch(() => Number.NaN));
    },
  });
}
