// One journey drawn as its graph, each node with its live counts (waiting now, reached, sent,
// skipped, failed, deferred); the run counts per version; pause and resume.
import type { JourneyNodeStats } from "@tidings/schema";
import type { TidingsAdmin } from "@tidings/sdk";
import { useState } from "react";
import { layout, NODE_H, NODE_W, type Placed } from "../graph.ts";
import { Pending, Table } from "../parts.tsx";
import { usePoll } from "../poll.ts";

const COUNTS = ["waiting", "reached", "sent", "skipped", "failed", "deferred"] as const;

export function JourneyPage({ admin, id }: { admin: TidingsAdmin; id: string }) {
  const [version, setVersion] = useState<number | undefined>();
  const { data, error, reload } = usePoll(async () => {
    const [journey, stats, templates] = await Promise.all([
      admin.journeys.get(id),
      admin.journeys.stats(id, version === undefined ? {} : { version }),
      admin.templates.list({ limit: 100 }).page(),
    ]);
    return { journey, stats, templateNames: new Map(templates.items.map((t) => [t.id, t.name])) };
  }, [admin, id, version]);
  const [acting, setActing] = useState<string>();
  if (!data) return <Pending error={error} />;
  const { journey, stats, templateNames } = data;
  const setStatus = async (status: "Running" | "Paused") => {
    setActing(undefined);
    try {
      await admin.journeys.upsert({ id: journey.id, name: journey.name, status });
      reload();
    } catch (err) {
      setActing(err instanceof Error ? err.message : String(err));
    }
  };
  const counts = new Map(stats.nodes.map((n) => [n.id, n]));
  const laid = journey.definition ? layout(journey.definition, templateNames) : undefined;
  const entryId = journey.definition ? "entry" : undefined;
  return (
    <section aria-labelledby="journey-title">
      <p>
        <a href="#/journeys">← Journeys</a>
      </p>
      <h1 id="journey-title">{journey.name}</h1>
      <div className="toolbar">
        <span>
          Status: <strong data-testid="journey-status">{journey.status}</strong>
        </span>
        {journey.status === "Running" && (
          <button type="button" onClick={() => setStatus("Paused")}>
            Pause
          </button>
        )}
        {journey.status === "Paused" && (
          <button type="button" onClick={() => setStatus("Running")}>
            Resume
          </button>
        )}
        <label>
          Version{" "}
          <select value={version ?? ""} onChange={(e) => setVersion(e.target.value === "" ? undefined : Number(e.target.value))}>
            <option value="">every version</option>
            {stats.versions.map((v) => (
              <option key={v.version} value={v.version}>
                {v.version}
              </option>
            ))}
          </select>
        </label>
        {acting && (
          <span role="alert" className="error">
            {acting}
          </span>
        )}
      </div>
      <dl className="totals" aria-label="Runs">
        {(["entered", "active", "completed", "converted"] as const).map((k) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd data-testid={`runs-${k}`}>{stats[k]}</dd>
          </div>
        ))}
      </dl>
      {laid ? (
        <div className="graph">
          <svg
            role="img"
            aria-label={`Graph of ${journey.name}: ${laid.nodes.length} nodes`}
            width={laid.width}
            height={laid.height}
            viewBox={`0 0 ${laid.width} ${laid.height}`}
          >
            <defs>
              <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
                <path d="M 0 0 L 10 5 L 0 10 z" />
              </marker>
            </defs>
            {laid.edges.map((e) => (
              <polyline
                key={`${e.from}-${e.to}`}
                className="edge"
                points={e.points.map((p) => `${p.x},${p.y}`).join(" ")}
                markerEnd="url(#arrow)"
              />
            ))}
            {laid.nodes.map((n) => (
              <NodeBox key={n.id} node={n} stats={counts.get(n.id === entryId ? "" : n.id)} />
            ))}
          </svg>
        </div>
      ) : (
        <p>This journey has no definition yet (its draft is incomplete).</p>
      )}
      <h2>Runs per version</h2>
      <Table
        columns={["Version", "Entered", "Active", "Completed", "Converted"]}
        rows={stats.versions}
        rowKey={(v) => v.version}
        cells={(v) => [v.version, v.entered, v.active, v.completed, v.converted]}
      />
    </section>
  );
}

function NodeBox({ node, stats }: { node: Placed; stats: JourneyNodeStats | undefined }) {
  const shown = COUNTS.filter((k) => stats?.[k] !== undefined);
  return (
    <g transform={`translate(${node.x},${node.y})`} data-node={node.id}>
      <rect width={NODE_W} height={NODE_H} rx="8" className={`node node-${node.type}`} />
      <text x="10" y="20" className="node-title">
        {node.id === "entry" ? node.type : `${node.id} · ${node.type.replace(/Node$/, "")}`}
      </text>
      <text x="10" y="38" className="node-detail">
        {node.detail}
      </text>
      {shown.map((k, i) => (
        <text key={k} x={10 + (i % 3) * 74} y={58 + Math.floor(i / 3) * 18} className="node-count" data-count={k}>
          {k} {stats?.[k]}
        </text>
      ))}
    </g>
  );
}
