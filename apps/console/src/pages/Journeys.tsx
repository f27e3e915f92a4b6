// Journeys: each with its status and run counts, refreshing by itself.
import type { TidingsAdmin } from "@tidings/sdk";
import { Alert, Table } from "../parts.tsx";
import { usePoll } from "../poll.ts";

export function JourneysPage({ admin }: { admin: TidingsAdmin }) {
  const { data, error } = usePoll(async () => {
    const { items } = await admin.journeys.list({ limit: 100 }).page();
    return Promise.all(items.map(async (j) => ({ journey: j, stats: await admin.journeys.stats(j.id) })));
  }, [admin]);
  return (
    <section aria-labelledby="journeys-title">
      <h1 id="journeys-title">Journeys</h1>
      <Alert message={error} />
      {data && data.length === 0 && <p>No journeys yet: create one with the CLI (`tidings apply -f`) or the SDK.</p>}
      {data && data.length > 0 && (
        <Table
          columns={["Name", "Status", "Version", "Entered", "Active", "Completed", "Converted"]}
          rows={data}
          rowKey={({ journey }) => journey.id}
          cells={({ journey, stats }) => [
            <a key="name" href={`#/journeys/${encodeURIComponent(journey.id)}`}>
              {journey.name}
            </a>,
            journey.status,
            journey.version ?? "—",
            stats.entered,
            stats.active,
            stats.completed,
            stats.converted,
          ]}
        />
      )}
    </section>
  );
}
