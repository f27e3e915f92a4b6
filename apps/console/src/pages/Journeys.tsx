// Journeys: each with its status and run counts, refreshing by itself.
import type { TidingsAdmin } from "@tidings/sdk";
import { Alert, Table } from "../parts.tsx";
import { usePoll } from "../poll.ts";

export function JourneysPage({ admin }: { admin: TidingsAdmin }) {
  const { data, error } = usePoll(async () => (await admin.journeys.list({ limit: 100 }).page()).items, [admin]);
  // The list draws as soon as it is read; the run counts (one request per journey) fill in after.
  const ids = (data ?? []).map((j) => j.id);
  const counts = usePoll(
    async () => new Map(await Promise.all(ids.map(async (id) => [id, await admin.journeys.stats(id)] as const))),
    [admin, ids.join(",")],
  );
  return (
    <section aria-labelledby="journeys-title">
      <h1 id="journeys-title">Journeys</h1>
      <Alert message={error ?? counts.error} />
      {data && data.length === 0 && <p>No journeys yet: create one with the CLI (`tidings apply -f`) or the SDK.</p>}
      {data && data.length > 0 && (
        <Table
          columns={["Name", "Status", "Version", "Entered", "Active", "Completed", "Converted"]}
          rows={data}
          rowKey={(journey) => journey.id}
          cells={(journey) => {
            const stats = counts.data?.get(journey.id);
            return [
              <a key="name" href={`#/journeys/${encodeURIComponent(journey.id)}`}>
                {journey.name}
              </a>,
              journey.status,
              journey.version ?? "—",
              ...(["entered", "active", "completed", "converted"] as const).map((k) => stats?.[k] ?? "…"),
            ];
          }}
        />
      )}
    </section>
  );
}
