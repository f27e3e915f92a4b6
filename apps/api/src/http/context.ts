// What every capability's routes get: configuration and the shared handles.
import type { ResolvedConfig } from "../config.ts";
import type { KeyStore } from "../auth/keys.ts";
import type { Db } from "../db/client.ts";
import type { Ingestor } from "../ingest/ingestor.ts";
import type { Metrics } from "./metrics.ts";

export interface AppContext {
  config: ResolvedConfig;
  db: Db;
  keys: KeyStore;
  ingestor: Ingestor;
  metrics: Metrics;
}
