// Broadcasts: progress (sent, skipped, failed, waiting) refreshing by itself, the rate since the
// last refresh and an estimated end; cancel.
import type { BroadcastResource } from "@tidings/schema";
import type { TidingsAdmin } from "@tidings/sdk";
import { useRef, useState } from "react";
import { Alert } from "../parts.tsx";
import { usePoll } from "../poll.ts";

const done = (b: BroadcastResource) => b.counts.sent + b.counts.skipped + b.counts.failed;

export function BroadcastsPage({ admin }: { admin: TidingsAdmin }) {
  // The last two readings of each broadcast's finished count: its rate now.
  const seen = useRef(new Map<string, { at: number; done: number; rate?: number }>());
  const [acting, setActing] = useState<string>();
  const { data, error, reload } = usePoll(async () => {
    const { items } = await admin.broadcasts.list({ limit: 50 }).page();
    const now = Date.now();
    for (const b of items) {
      const last = seen.current.get(b.id);
      const rate = last && now > last.at ? ((done(b) - last.done) * 1000) / (now - last.at) : undefined;
      seen.current.set(b.id, { at: now, done: done(b), rate: rate ?? last?.rate });
    }
    return items;
  }, [admin]);
  const cancel = async (b: BroadcastResource) => {
    setActing(undefined);
    try {
      await admin.broadcasts.cancel(b.id);
      reload();
    } catch (err) {
      setActing(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <section aria-labelledby="broadcasts-title">
      <h1 id="broadcasts-title">Broadcasts</h1>
      <Alert message={error ?? acting} />
      {data && data.length === 0 && <p>No broadcasts yet.</p>}
      {data?.map((b) => {
        const rate = seen.current.get(b.id)?.rate;
        const left = b.counts.audience - done(b);
        const live = b.status === "Queued" || b.status === "Running";
        return (
          <article key={b.id} className="broadcast" aria-label={b.name} data-broadcast={b.name}>
            <h2>{b.name}</h2>
            <p>
              <strong data-testid="broadcast-status">{b.status}</strong> · {b.channel}
              {b.category ? ` · ${b.category}` : ""}
            </p>
            <progress max={Math.max(1, b.counts.audience)} value={done(b)} aria-label={`${b.name}: progress`} />
            <dl className="totals">
              {(["audience", "sent", "skipped", "failed", "pending", "deferred"] as const).map((k) => (
                <div key={k}>
                  <dt>{k === "pending" ? "waiting" : k}</dt>
                  <dd data-count={k}>{b.counts[k] ?? 0}</dd>
                </div>
              ))}
            </dl>
            {live && (
              <p>
                {rate !== undefined && rate > 0
                  ? `${Math.round(rate)} messages/s; about ${Math.ceil(left / rate)} s to go`
                  : "Measuring the rate…"}{" "}
                <button type="button" onClick={() => cancel(b)}>
                  Cancel {b.name}
                </button>
              </p>
            )}
          </article>
        );
      })}
    </section>
  );
}
