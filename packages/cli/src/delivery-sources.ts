// Where a delivery comes from, by name: `journey "Welcome" node send-welcome`, `broadcast
// "Spring sale"`, and its template's name — names read from the lists once, and again when an id
// appears that they did not hold (a journey created since).
import type { DeliveryRecord, OperationId } from "@tidings/schema";
import type { Api } from "./api.js";

type Listed = "journeys" | "broadcasts" | "templates";

export class DeliveryNames {
  private readonly names = new Map<Listed, Map<string, string>>();

  constructor(private readonly api: Api) {}

  /** Reads the names the deliveries need and were not known yet (one list per kind at most). */
  async learn(deliveries: readonly DeliveryRecord[]): Promise<void> {
    const wanted: [Listed, string | undefined][] = deliveries.flatMap((d) => [
      ["journeys", d.journeyId ?? undefined] as [Listed, string | undefined],
      ["broadcasts", d.broadcastId ?? undefined] as [Listed, string | undefined],
      ["templates", d.templateId ?? undefined] as [Listed, string | undefined],
    ]);
    const stale = new Set(wanted.filter(([kind, id]) => id !== undefined && !this.names.get(kind)?.has(id)).map(([kind]) => kind));
    for (const kind of stale) this.names.set(kind, await this.list(kind));
  }

  /** `journey "Welcome" node send-welcome`, `broadcast "Spring sale"`, ids where a name is unknown. */
  source(d: DeliveryRecord): string {
    if (d.broadcastId) return `broadcast ${this.named("broadcasts", d.broadcastId)}`;
    if (d.journeyId) return `journey ${this.named("journeys", d.journeyId)} node ${d.nodeId ?? "-"}`;
    return "-";
  }

  /** The template's name (quoted), or its id, or nothing. */
  template(d: DeliveryRecord): string {
    return d.templateId ? this.named("templates", d.templateId) : "";
  }

  private named(kind: Listed, id: string): string {
    const name = this.names.get(kind)?.get(id);
    return name === undefined ? id : JSON.stringify(name);
  }

  private async list(kind: Listed): Promise<Map<string, string>> {
    const call = this.api.call.bind(this.api) as unknown as (
      id: OperationId,
      input: unknown,
    ) => Promise<{ items: { id: string; name: string }[]; nextCursor: string | null }>;
    const names = new Map<string, string>();
    let cursor: string | undefined;
    do {
      const page = await call(`${kind}.list` as OperationId, { query: { limit: 500, cursor } });
      for (const item of page.items) names.set(item.id, item.name);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return names;
  }
}
