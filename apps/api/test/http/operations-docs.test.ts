// docs/operations.md and the Grafana dashboard stay true: every setting the server reads (the
// environment schema of src/config.ts) is in the page's configuration table and nothing else is,
// every metric /metrics exposes is described there and every tidings_ metric it names exists,
// and every metric the dashboard's expressions use exists.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");
const operations = read("../../../../docs/operations.md");

/** The variables of `const EnvSchema = z.object({ … })` in config.ts's source. */
function configVariables(source: string): string[] {
  const schema = /^const EnvSchema = z\.object\(\{\n([\s\S]*?)^\}\);/m.exec(source);
  if (!schema) throw new Error("EnvSchema not found in src/config.ts");
  return [...schema[1]!.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]!);
}

/** Metric families in a Prometheus text exposition, by name, with their type. */
function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The series names a family exposes (a histogram's _bucket, _sum and _count). */
function seriesNames(exposed: Map<string, string>): Set<string> {
  const names = new Set<string>();
  for (const [name, type] of exposed) {
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
    else if (type === "summary") for (const suffix of ["", "_sum", "_count"]) names.add(name + suffix);
    else names.add(name);
  }
  return names;
}

/** Metric names in PromQL: identifiers of our families' prefixes (functions, labels and keywords have none). */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b((?:tidings|nodejs|process)_[A-Za-z0-9_:]*)/g)].map((m) => m[1]!);
}

/** Every PromQL expression of a dashboard: panel targets (rows included) and query variables. */
function dashboardExpressions(dashboard: any): string[] {
  const out: string[] = [];
  const panels = (list: any[] = []) => {
    for (const p of list) {
      for (const t of p.targets ?? []) if (typeof t.expr === "string") out.push(t.expr);
      panels(p.panels);
    }
  };
  panels(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    const q = typeof v.query === "string" ? v.query : v.query?.query;
    if (v.type === "query" && typeof q === "string") out.push(q);
  }
  return out;
}

let t: TestApp;
let exposed: Map<string, string>;
beforeAll(async () => {
  t = await createTestApp();
  exposed = families((await request(t.url, "GET", "/metrics")).text);
});
afterAll(async () => {
  await t?.close();
});

describe("docs/operations.md", () => {
  it("has every setting of src/config.ts in its configuration table, and no other", () => {
    const variables = configVariables(read("../../src/config.ts"));
    expect(variables).toEqual(expect.arrayContaining(["DATABASE_URL", "TIDINGS_ROLE", "TIDINGS_WORKER_CONCURRENCY"]));
    const table = [...operations.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]!);
    expect(table.slice().sort()).toEqual(variables.slice().sort());
  });

  it("describes every metric /metrics exposes, and names no tidings_ metric that does not exist", () => {
    expect(exposed.size).toBeGreaterThan(30);
    const missing = [...exposed.keys()].filter((name) => !operations.includes(`\`${name}\``));
    expect(missing, "metrics exposed but not in docs/operations.md").toEqual([]);
    const series = seriesNames(exposed);
    const named = [...new Set([...operations.matchAll(/`(tidings_[a-z0-9_]+)`/g)].map((m) => m[1]!))];
    expect(named.filter((name) => !exposed.has(name) && !series.has(name))).toEqual([]);
  });

  it("is linked from the README, with docs/scaling.md", () => {
    const readme = read("../../../../README.md");
    expect(readme).toContain("(docs/operations.md)");
    expect(readme).toContain("(docs/scaling.md)");
  });
});

describe("docs/grafana/tidings.json", () => {
  const dashboard = JSON.parse(read("../../../../docs/grafana/tidings.json"));
  const expressions = dashboardExpressions(dashboard);

  it("uses only metrics /metrics exposes", () => {
    expect(expressions.length).toBeGreaterThan(15);
    const series = seriesNames(exposed);
    const unknown = expressions.flatMap((expr) =>
      metricsIn(expr)
        .filter((name) => !series.has(name))
        .map((name) => `${name} in ${expr}`),
    );
    expect(unknown).toEqual([]);
  });

  it("charts ingestion, engine lag, the job queue, deliveries and journey timer lateness", () => {
    const used = new Set(expressions.flatMap(metricsIn));
    for (const name of [
      "tidings_events_ingested_total",
      "tidings_ingest_commit_duration_seconds_bucket",
      "tidings_segment_engine_lag_seconds_bucket",
      "tidings_segment_outbox_oldest_age_seconds",
      "tidings_jobs_queue_depth",
      "tidings_jobs_oldest_age_seconds",
      "tidings_deliveries_total",
      "tidings_journey_timer_lateness_seconds_bucket",
    ])
      expect(used, name).toContain(name);
  });

  it("would notice an expression over a metric that does not exist", () => {
    const series = seriesNames(exposed);
    const probe = dashboardExpressions({
      panels: [{ type: "row", panels: [{ targets: [{ expr: 'sum(rate(tidings_deliveries_sent_total{channel="Email"}[5m]))' }] }] }],
      templating: { list: [{ type: "query", query: { query: "label_values(tidings_jobs_queue_length, instance)" } }] },
    });
    expect(probe.flatMap(metricsIn).filter((name) => !series.has(name))).toEqual([
      "tidings_deliveries_sent_total",
      "tidings_jobs_queue_length",
    ]);
    // A histogram is read through its series, never by its bare name.
    expect(series.has("tidings_journey_timer_lateness_seconds")).toBe(false);
  });
});
