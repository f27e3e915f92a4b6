// Segments: each with its size now; one segment's definition as a tree, its size over time (a
// chart of the size history) and its members, searchable by user id.
import type { SegmentDefinition, SegmentSizesResponse } from "@tidings/schema";
import type { TidingsAdmin } from "@tidings/sdk";
import { type ReactNode, useState } from "react";
import { Alert, Pending, Table } from "../parts.tsx";
import { usePoll } from "../poll.ts";

export function SegmentsPage({ admin }: { admin: TidingsAdmin }) {
  const { data, error } = usePoll(async () => (await admin.segments.list({ limit: 100 }).page()).items, [admin], 5000);
  return (
    <section aria-labelledby="segments-title">
      <h1 id="segments-title">Segments</h1>
      <Alert message={error} />
      {data && data.length === 0 && <p>No segments yet.</p>}
      {data && data.length > 0 && (
        <Table
          columns={["Name", "Members", "State"]}
          rows={data}
          rowKey={(s) => s.id}
          cells={(s) => [
            <a key="name" href={`#/segments/${encodeURIComponent(s.id)}`}>
              {s.name}
            </a>,
            <span key="size" data-segment-size={s.name}>
              {s.memberCount}
            </span>,
            s.failing ? `failing: ${s.failing.reason}` : "current",
          ]}
        />
      )}
    </section>
  );
}

export function SegmentPage({ admin, id }: { admin: TidingsAdmin; id: string }) {
  const [interval, setInterval] = useState<"day" | "hour">("hour");
  const [search, setSearch] = useState("");
  const { data, error } = usePoll(async () => {
    const span = interval === "hour" ? 2 * 86_400_000 : 30 * 86_400_000;
    const [segment, sizes] = await Promise.all([admin.segments.get(id), admin.segments.sizes(id, { interval, from: Date.now() - span })]);
    return { segment, sizes };
  }, [admin, id, interval]);
  // The server searches every member (by part of the user id); the first 100 found are shown.
  const query = search.trim();
  const members = usePoll(
    () => admin.segments.users.list(id, { limit: 100, ...(query ? { search: query } : {}) }).page(),
    [admin, id, query],
  );
  if (!data) return <Pending error={error} />;
  const { segment, sizes } = data;
  return (
    <section aria-labelledby="segment-title">
      <p>
        <a href="#/segments">← Segments</a>
      </p>
      <h1 id="segment-title">{segment.name}</h1>
      <p>
        Members now: <strong data-testid="segment-size">{segment.memberCount}</strong>
      </p>
      <h2>Definition</h2>
      {segment.definition ? <DefinitionTree definition={segment.definition} /> : <p>{segment.failing?.reason}</p>}
      <h2>Size over time</h2>
      <label>
        Points{" "}
        <select value={interval} onChange={(e) => setInterval(e.target.value as "day" | "hour")}>
          <option value="hour">hourly, 2 days</option>
          <option value="day">daily, 30 days</option>
        </select>
      </label>
      <SizeChart sizes={sizes} />
      <h2>Members</h2>
      <label>
        Find a user <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="user id" />
      </label>
      <Alert message={members.error} />
      <ul className="members" aria-label="Members">
        {(members.data?.items ?? []).map((m) => (
          <li key={m.userId}>
            <a href={`#/users/${encodeURIComponent(m.userId)}`}>{m.userId}</a>{" "}
            <span className="hint">since {new Date(m.enteredAt).toLocaleString()}</span>
          </li>
        ))}
      </ul>
      {members.data?.nextCursor && <p className="hint">The first 100 found, by user id: narrow the search to find others.</p>}
    </section>
  );
}

type DefNode = SegmentDefinition["nodes"][number] | SegmentDefinition["entryNode"];

/** One line per node: what it tests, its children indented under it. */
function DefinitionTree({ definition }: { definition: SegmentDefinition }) {
  const byId = new Map<string, DefNode>(definition.nodes.map((n) => [n.id, n]));
  const render = (node: DefNode, depth: number): ReactNode => {
    const n = node as Record<string, unknown> & { id: string; type: string };
    const kids = Array.isArray(n.children) ? (n.children as string[]) : typeof n.child === "string" ? [n.child] : [];
    const detail = Object.entries(n)
      .filter(([k]) => !["id", "type", "children", "child"].includes(k))
      .map(([k, v]) => `${k} ${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
      .join(" · ");
    return (
      <li key={n.id}>
        <strong>{n.type}</strong> {detail && <span className="hint">{detail}</span>}
        {kids.length > 0 && depth < 20 && (
          <ul>{kids.map((k) => (byId.has(k) ? render(byId.get(k)!, depth + 1) : <li key={k}>{k}</li>))}</ul>
        )}
      </li>
    );
  };
  return <ul className="tree">{render(definition.entryNode, 0)}</ul>;
}

const W = 720;
const H = 200;

/** The sizes as a line: the time along, the members up. */
function SizeChart({ sizes }: { sizes: SegmentSizesResponse }) {
  const known = sizes.points.filter((p) => p.size !== null) as { at: number; size: number }[];
  if (known.length === 0) return <p>No history yet.</p>;
  const t0 = sizes.points[0]!.at;
  const t1 = sizes.points.at(-1)!.at;
  const top = Math.max(1, ...known.map((p) => p.size));
  const x = (at: number) => 40 + ((at - t0) / Math.max(1, t1 - t0)) * (W - 50);
  const y = (size: number) => H - 20 - (size / top) * (H - 40);
  const last = known.at(-1)!;
  return (
    <svg
      className="chart"
      role="img"
      aria-label={`Members over time: from ${known[0]!.size} to ${last.size}, at most ${top}`}
      viewBox={`0 0 ${W} ${H}`}
      width="100%"
      preserveAspectRatio="xMinYMin meet"
    >
      <line x1="40" y1={H - 20} x2={W - 10} y2={H - 20} className="axis" />
      <text x="4" y={y(top) + 4} className="node-count">
        {top}
      </text>
      <text x="4" y={H - 16} className="node-count">
        0
      </text>
      <polyline className="line" points={known.map((p) => `${x(p.at)},${y(p.size)}`).join(" ")} data-points={known.length} />
      <text x="40" y={H - 4} className="node-count">
        {new Date(t0).toLocaleDateString()}
      </text>
      <text x={W - 120} y={H - 4} className="node-count">
        {new Date(t1).toLocaleDateString()}
      </text>
    </svg>
  );
}
