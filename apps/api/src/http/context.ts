// What every capability's routes get: configuration and the shared handles.
import type { Config } from "../config.ts";
import type { KeyStore } from "../auth/keys.ts";
import type { Db } from "../db/client.ts";
import type { Ingestor } from "../ingest/ingestor.ts";
import type { Metrics } from "./metrics.ts";

export interface AppContext {
  config: Config;
  db: Db;
  keys: KeyStore;
  ingestor: Ingestor;
  metrics: Metrics;
}
