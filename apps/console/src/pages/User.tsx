// A user's story in one timeline, newest first: their events, the segments they entered and left,
// their journey runs (entered, where they are or ended) and every delivery with its status and
// reason — why a message went, waits or did not go.
import type { TidingsAdmin } from "@tidings/sdk";
import { Pending } from "../parts.tsx";
import { usePoll } from "../poll.ts";

interface Moment {
  at: number;
  kind: "event" | "segment" | "journey" | "delivery";
  text: string;
  detail?: string;
}

export function UserPage({ admin, userId }: { admin: TidingsAdmin; userId: string }) {
  const { data, error } = usePoll(
    async () => {
      const [user, deliveries] = await Promise.all([admin.users.get(userId), admin.deliveries.list({ userId, limit: 100 }).page()]);
      const moments: Moment[] = [
        ...user.recentEvents.map((e) => ({
          at: e.timestamp,
          kind: "event" as const,
          text: `${e.type}${e.event ? ` "${e.event}"` : ""}`,
        })),
        // Entries and exits from the membership history (its latest 50); a current membership
        // the history read does not mention still shows when it began.
        ...(user.segmentChanges ?? []).map((c) => ({
          at: c.at,
          kind: "segment" as const,
          text: `${c.entered ? "entered" : "left"} segment ${c.name}`,
        })),
        ...user.segments
          .filter((s) => !user.segmentChanges?.some((c) => c.segmentId === s.segmentId))
          .map((s) => ({ at: s.enteredAt, kind: "segment" as const, text: `entered segment ${s.name}` })),
        ...(user.journeyRuns ?? []).flatMap((r) => [
          { at: r.enteredAt, kind: "journey" as const, text: `entered journey ${r.journeyName} (version ${r.version})` },
          r.endedAt
            ? { at: r.endedAt, kind: "journey" as const, text: `left journey ${r.journeyName}: ${r.status} at ${r.nodeId}` }
            : { at: r.updatedAt, kind: "journey" as const, text: `in journey ${r.journeyName} at ${r.nodeId}` },
        ]),
        ...deliveries.items.map((d) => ({
          at: d.updatedAt,
          kind: "delivery" as const,
          text: `${d.channel} message ${d.status}${d.nodeId ? ` (journey node ${d.nodeId})` : d.broadcastId ? " (broadcast)" : ""}`,
          ...(d.reason ? { detail: d.reason } : {}),
        })),
      ];
      return { user, moments: moments.sort((a, b) => b.at - a.at) };
    },
    [admin, userId],
    5000,
  );
  if (!data) return <Pending error={error} />;
  const { user, moments } = data;
  return (
    <section aria-labelledby="user-title">
      <h1 id="user-title">{user.userId}</h1>
      <p className="hint">
        First seen {new Date(user.firstSeenAt).toLocaleString()}, last seen {new Date(user.lastSeenAt).toLocaleString()}
        {user.identities.length > 0 ? `; also known as ${user.identities.join(", ")}` : ""}
      </p>
      <details>
        <summary>Traits</summary>
        <pre>{JSON.stringify(user.traits, null, 2)}</pre>
      </details>
      <h2>Timeline</h2>
      <ol className="timeline" aria-label="Timeline, newest first">
        {moments.map((m, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: moments have no id of their own; the list is rebuilt whole
          <li key={i} data-kind={m.kind}>
            <time dateTime={new Date(m.at).toISOString()}>{new Date(m.at).toLocaleString()}</time> <strong>{m.kind}</strong> {m.text}
            {m.detail && <div className="reason">{m.detail}</div>}
          </li>
        ))}
      </ol>
    </section>
  );
}
