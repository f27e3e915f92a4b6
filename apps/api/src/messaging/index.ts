// Messaging: channel providers and their senders (SMTP, Twilio, FCM, Expo, webhooks), the delivery
// rows and the pipeline that claims, renders, sends and marks them for every source (broadcasts,
// journeys), and the deliveries read side.
import type pg from "pg";
import type { ResolvedConfig } from "../config.ts";
import type { PrismaClient } from "../db/client.ts";
import type { JobLayer, JobLog } from "../jobs/index.ts";
import { SecretBox } from "../lib/secrets.ts";
import type { Registry } from "../http/metrics.ts";
import { type Module, routesOf } from "../http/module.ts";
import type { OutboundGuard } from "../outbound/index.ts";
import type { Gatekeeper } from "../policies/index.ts";
import type { RenderPool } from "../templates/index.ts";
import { createSenders } from "./channels/index.ts";
import { Deliverer } from "./send-chunk.ts";
import { deliveryRoutes } from "./delivery-read-routes.ts";
import { messagingMetrics } from "./metrics.ts";
import { providerRoutes } from "./providers/routes.ts";
import { SendJobs } from "./senders.ts";

export { verifySecretKey } from "./secret-key.ts";
export type { SendJobs } from "./senders.ts";
export { dropTallies, readTallies, skipUnsent, type TalliedCounts, tallyQueued } from "./tallies.ts";
export type { DeliverySource, StreamSettings } from "./sources.ts";

export interface MessagingDeps {
  pool: pg.Pool;
  prisma: PrismaClient;
  jobs: JobLayer;
  registry: Registry;
  guard: OutboundGuard;
  renders: RenderPool;
  /** Delivery policies: the gate each claimed chunk passes, provider rates. */
  gatekeeper: Gatekeeper;
  /** Where the senders' slot locks are held (a pool of their own). */
  connectionString: string;
  config: Pick<ResolvedConfig, "secretKey" | "deliveryLeaseSeconds">;
  log: JobLog;
}

export function createMessaging({
  pool,
  prisma,
  jobs,
  registry,
  guard,
  renders,
  gatekeeper,
  connectionString,
  config,
  log,
}: MessagingDeps) {
  const metrics = messagingMetrics(registry);
  const senders = createSenders({ guard, log });
  const box = new SecretBox(config.secretKey);
  const leaseSeconds = config.deliveryLeaseSeconds;
  const deliverer = new Deliverer({ pool, prisma, box, senders, renders, gatekeeper, leaseSeconds, metrics, log });
  const sends = new SendJobs({ pool, connectionString, jobs, deliverer, leaseSeconds, log });
  sends.register();
  const module: Module = {
    adminRoutes: routesOf(providerRoutes({ prisma, box, guard }), deliveryRoutes({ prisma })),
    async close() {
      await sends.close();
      await senders.close();
    },
  };
  return { sends, module };
}
