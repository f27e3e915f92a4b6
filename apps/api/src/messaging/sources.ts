// Delivery sources. A delivery belongs to one source — a broadcast's member, a journey run's
// message node, later a direct send — and is unique per source by a database constraint. The
// deliveries of one source instance (a broadcast, a journey) form a stream: claimed, paced, sent,
// retried and marked by the same pipeline (senders.ts, send-chunk.ts), which knows streams only
// through this interface. Each capability registers its kind of source.
import type { MessageTemplateDefinition } from "@tidings/schema";

/** The deliveries column naming a stream (the table's source columns, indexed with status and due_at). */
export type StreamColumn = "broadcast_id" | "journey_id";

/** One stream: the deliveries whose `column` is `id`. */
export interface StreamRef {
  column: StreamColumn;
  id: string;
}

/** How a stream sends right now. */
export interface StreamSettings {
  /** One template for every delivery (a broadcast's); otherwise each row's template_id is read. */
  template?: MessageTemplateDefinition;
  /** Messages per second across every worker; null: as fast as the provider takes them. */
  rateLimitPerSecond: number | null;
  /**
   * Told, while the workspace's delivery policies may hold messages, the deliveries a chunk
   * claimed once they are marked (those Sent, Failed or Skipped are decided; a journey's runs
   * waiting for them go on).
   */
  decided?: (ids: string[]) => Promise<void>;
}

export interface DeliverySource {
  /** The kind's name in job payloads and lock keys ("broadcast", "journey"). */
  kind: string;
  column: StreamColumn;
  /** The stream's settings, or null when it must not send now (cancelled, paused, gone). */
  settings(workspaceId: string, id: string): Promise<StreamSettings | null>;
  /** Streams that may have deliveries to send: the tick keeps a sender on each that has work due. */
  activeStreams(): Promise<{ workspaceId: string; id: string }[]>;
  /** Nothing is left to send or retry (every delivery Sent, Failed or Skipped). */
  drained?(workspaceId: string, id: string): Promise<void>;
}
