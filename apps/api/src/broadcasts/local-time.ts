// Local-time broadcasts: each member's message is due at `HH:MM` in the member's zone — the
// `timezone` trait when PostgreSQL knows it, else the workspace's default zone (delivery
// policies), else UTC — today, or tomorrow (or at once, if asked) when that time has passed.
// Computed in the statement that queues the audience; send windows still hold what falls due.
import { type Sql, sql } from "../db/sql.ts";

/** The join giving each member `m` its zone, and the due time of its delivery. */
export function localSendTime(
  workspaceId: string,
  at: string,
  ifPassed: "tomorrow" | "now",
  defaultZone: string | undefined,
): { join: Sql; due: Sql } {
  const join = sql`LEFT JOIN profiles lp ON lp.workspace_id = ${workspaceId}::uuid AND lp.profile_id = m.profile_id
    LEFT JOIN pg_timezone_names lz ON lz.name = lp.traits ->> 'timezone'
    CROSS JOIN LATERAL (SELECT coalesce(lz.name, (SELECT name FROM pg_timezone_names WHERE name = ${defaultZone ?? null}::text), 'UTC') AS tz) lzone
    CROSS JOIN LATERAL (SELECT date_trunc('day', now() AT TIME ZONE lzone.tz) + ${at}::time AS today) lday`;
  const due = sql`CASE WHEN (lday.today AT TIME ZONE lzone.tz) >= now() THEN lday.today AT TIME ZONE lzone.tz
      WHEN ${ifPassed === "now"} THEN now()
      ELSE (lday.today + interval '1 day') AT TIME ZONE lzone.tz END`;
  return { join, due };
}
