// Deliveries, searchable by user, status, channel, source and time: each with its reason (why it
// was skipped, held or failed) and, opened, the message as rendered.
import type { Channel, DeliveryStatus } from "@tidings/schema";
import type { TidingsAdmin } from "@tidings/sdk";
import { type FormEvent, useState } from "react";
import { Alert, Table } from "../parts.tsx";
import { usePoll } from "../poll.ts";

const STATUSES: DeliveryStatus[] = ["Queued", "Sending", "Sent", "Failed", "Skipped", "Deferred"];
const CHANNELS: Channel[] = ["Email", "Sms", "MobilePush", "Webhook"];

interface Filters {
  userId: string;
  status: string;
  channel: string;
  source: string;
  since: string;
}

const EMPTY: Filters = { userId: "", status: "", channel: "", source: "", since: "" };

/** The list query of the filters: the source is a broadcast or journey id. */
function queryOf(f: Filters) {
  const source = f.source.trim();
  return {
    limit: 100,
    include: "content" as const,
    ...(f.userId.trim() ? { userId: f.userId.trim() } : {}),
    ...(f.status ? { status: f.status as DeliveryStatus } : {}),
    ...(f.channel ? { channel: f.channel as Channel } : {}),
    ...(source.startsWith("journey:") ? { journeyId: source.slice(8) } : source ? { broadcastId: source.replace(/^broadcast:/, "") } : {}),
    ...(f.since ? { since: Date.parse(f.since) } : {}),
  };
}

export function DeliveriesPage({ admin, initial }: { admin: TidingsAdmin; initial?: Partial<Filters> }) {
  const [draft, setDraft] = useState<Filters>({ ...EMPTY, ...initial });
  const [filters, setFilters] = useState<Filters>({ ...EMPTY, ...initial });
  const { data, error } = usePoll(async () => (await admin.deliveries.list(queryOf(filters)).page()).items, [admin, filters], 5000);
  const field = (name: keyof Filters) => ({
    value: draft[name],
    onChange: (e: { target: { value: string } }) => setDraft({ ...draft, [name]: e.target.value }),
  });
  const search = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
  };
  return (
    <section aria-labelledby="deliveries-title">
      <h1 id="deliveries-title">Deliveries</h1>
      <form className="filters" onSubmit={search}>
        <label>
          User <input {...field("userId")} placeholder="user id" />
        </label>
        <AnyOf label="Status" options={STATUSES} {...field("status")} />
        <AnyOf label="Channel" options={CHANNELS} {...field("channel")} />
        <label>
          Source <input {...field("source")} placeholder="broadcast id, or journey:ID" />
        </label>
        <label>
          Since <input type="datetime-local" {...field("since")} />
        </label>
        <button type="submit">Search</button>
      </form>
      <Alert message={error} />
      {data && data.length === 0 && <p>No deliveries match.</p>}
      {data && data.length > 0 && (
        <Table
          columns={["When", "User", "Channel", "Status", "Reason", "Message"]}
          rows={data}
          rowKey={(d) => d.id}
          cells={(d) => [
            new Date(d.createdAt).toLocaleString(),
            <a key="user" href={`#/users/${encodeURIComponent(d.userId)}`}>
              {d.userId}
            </a>,
            d.channel,
            <span key="status" data-status={d.status}>
              {d.status}
              {d.notBefore ? ` until ${new Date(d.notBefore).toLocaleString()}` : ""}
            </span>,
            <span key="reason" data-reason>
              {d.reason ?? ""}
            </span>,
            d.rendered ? (
              <details key="message">
                <summary>show</summary>
                <pre>{JSON.stringify(d.rendered, null, 2)}</pre>
              </details>
            ) : (
              ""
            ),
          ]}
        />
      )}
    </section>
  );
}

/** A filter's select: "any", or one of `options`. */
function AnyOf({
  label,
  options,
  ...select
}: {
  label: string;
  options: readonly string[];
  value: string;
  onChange: (e: { target: { value: string } }) => void;
}) {
  return (
    <label>
      {label}{" "}
      <select {...select}>
        <option value="">any</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}
