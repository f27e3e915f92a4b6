// What every capability's routes get: configuration and the shared handles.
import type { ResolvedConfig } from "../config.ts";
import type { KeyStore } from "../auth/keys.ts";
import type { Db } from "../db/client.ts";
import type { Ingestor } from "../ingest/ingestor.ts";
import type { JobLayer } from "../jobs/index.ts";
import type { JourneyRuntime } from "../journeys/runtime/index.ts";
import type { OutboundGuard } from "../outbound/guard.ts";
import type { SendJobs } from "../messaging/send-jobs.ts";
import type { Retention } from "../retention/index.ts";
import type { RenderPool } from "../templates/render-pool.ts";
import type { SegmentEngine } from "../segments/engine/index.ts";
import type { Metrics } from "../http/metrics.ts";

export interface AppContext {
  config: ResolvedConfig;
  db: Db;
  keys: KeyStore;
  ingestor: Ingestor;
  /** Background jobs: register tasks before `startTidings` starts it. */
  jobs: JobLayer;
  /** Keeps segment membership current (docs/segments.md). */
  segments: SegmentEngine;
  /** Checks every outbound destination a workspace directs (webhooks, providers, SMTP): one per process. */
  guard: OutboundGuard;
  /** Every Liquid parse and render, off the event loop (templates/render-pool.ts); closed after the jobs stop. */
  renders: RenderPool;
  /** Channel senders (pooled connections, cached tokens), closed after the jobs stop. */
  senders: { close(): Promise<void> };
  /** The delivery pipeline's senders, per source (broadcasts, journeys). */
  sends: SendJobs;
  /** Runs journeys (docs/journeys.md). */
  journeys: JourneyRuntime;
  /** Prunes what is older than the retention settings (src/retention). */
  retention: Retention;
  metrics: Metrics;
}
