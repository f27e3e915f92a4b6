// Journeys: each with its status and run counts, refreshing by itself.
import type { TidingsAdmin } from "@tidings/sdk";
import { usePoll } from "../poll.ts";

export function JourneysPage({ admin }: { admin: TidingsAdmin }) {
  const { data, error } = usePoll(async () => {
    const { items } = await admin.journeys.list({ limit: 100 }).page();
    return Promise.all(items.map(async (j) => ({ journey: j, stats: await admin.journeys.stats(j.id) })));
  }, [admin]);
  return (
    <section aria-labelledby="journeys-title">
      <h1 id="journeys-title">Journeys</h1>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {data && data.length === 0 && <p>No journeys yet: create one with the CLI (`tidings apply -f`) or the SDK.</p>}
      {data && data.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Version</th>
              <th scope="col">Entered</th>
              <th scope="col">Active</th>
              <th scope="col">Completed</th>
              <th scope="col">Converted</th>
            </tr>
          </thead>
          <tbody>
            {data.map(({ journey, stats }) => (
              <tr key={journey.id}>
                <td>
                  <a href={`#/journeys/${encodeURIComponent(journey.id)}`}>{journey.name}</a>
                </td>
                <td>{journey.status}</td>
                <td>{journey.version ?? "—"}</td>
                <td>{stats.entered}</td>
                <td>{stats.active}</td>
                <td>{stats.completed}</td>
                <td>{stats.converted}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
