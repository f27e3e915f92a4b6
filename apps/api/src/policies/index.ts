// Delivery policies (PRODUCT §13): the workspace's frequency caps, send windows in each user's
// zone, provider rates and time-to-live; the gate the senders pass each claimed chunk through,
// in the claim's transaction; and the rate a provider is paced at.
import type { Policies, ProviderType } from "@tidings/schema";
import type pg from "pg";
import client from "prom-client";
import type { PrismaClient } from "../db/client.ts";
import type { Registry } from "../http/metrics.ts";
import type { Module } from "../http/module.ts";
import { type GateResult, type GateRow, gate } from "./gate.ts";
import { policyRoutes } from "./routes.ts";
import { holdsMessages, policiesFor } from "./service.ts";

export type { GateRow, GateResult } from "./gate.ts";
export { holdsMessages, POLICIES_NAME, policiesFor, upsertPolicies } from "./service.ts";
export type { Policies } from "@tidings/schema";

/** Providers' published limits, paced without a rule (messages per second). */
const DEFAULT_RATES: Partial<Record<ProviderType, { perSecond: number; burst: number }>> = { Expo: { perSecond: 600, burst: 600 } };

export interface PolicyDeps {
  prisma: PrismaClient;
  registry: Registry;
}

function policyMetrics(registry: Registry) {
  const counter = (name: string, help: string) =>
    new client.Counter({ name, help, labelNames: ["channel", "rule"] as const, registers: [registry] });
  return {
    deferred: counter("tidings_deliveries_deferred_total", "Messages held by a delivery policy, by channel and rule (cap, window)"),
    released: counter("tidings_deliveries_released_total", "Deferred messages that went out when their time came, by channel"),
    expired: counter(
      "tidings_deliveries_policy_skipped_total",
      "Messages a delivery policy skipped, by channel and rule (cap or window with action skip, ttl: held past the time-to-live)",
    ),
  };
}

export type Gatekeeper = ReturnType<typeof createPolicies>["gatekeeper"];

export function createPolicies({ prisma, registry }: PolicyDeps) {
  const metrics = policyMetrics(registry);
  const gatekeeper = {
    /** The workspace's policies, read per chunk. */
    policies: (db: Pick<pg.Pool, "query">, workspaceId: string) => policiesFor(db, workspaceId),
    /** Whether claimed chunks must pass the gate (a cap or a window is set). */
    holds: holdsMessages,
    /** Decides a claimed chunk in its transaction; counts what it held, released and skipped. */
    async pass(db: Pick<pg.PoolClient, "query">, workspaceId: string, p: Policies, rows: GateRow[]): Promise<GateResult> {
      const result = await gate(db, workspaceId, p, rows, Date.now());
      for (const d of result.deferred) metrics.deferred.inc({ channel: d.channel, rule: d.rule });
      for (const channel of result.released) metrics.released.inc({ channel, rule: "" });
      for (const s of result.skipped) metrics.expired.inc({ channel: s.channel, rule: s.rule });
      return result;
    },
    /** The pace of a provider type: the workspace's rule, else its published limit, else none. */
    providerRate(p: Policies, type: ProviderType) {
      return p.providerRates.find((r) => r.provider === type) ?? DEFAULT_RATES[type] ?? null;
    },
  };
  return { gatekeeper, module: { adminRoutes: policyRoutes({ prisma }) } satisfies Module };
}
