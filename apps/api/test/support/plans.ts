// Reading EXPLAIN's JSON in the tests that hold a statement to its plan.
import type pg from "pg";

export type Plan = { "Node Type": string; "Index Name"?: string; "Relation Name"?: string; Plans?: Plan[] };

/** The nodes of a plan, all levels. */
export const planNodes = (plan: Plan): Plan[] => [plan, ...(plan.Plans ?? []).flatMap(planNodes)];

/** A statement's plan (not run). */
export async function explain(client: Pick<pg.ClientBase, "query">, query: { text: string; values?: unknown[] }): Promise<Plan> {
  const { rows } = await client.query({ text: `EXPLAIN (FORMAT JSON) ${query.text}`, values: query.values });
  return rows[0]["QUERY PLAN"][0].Plan;
}

/** How a statement's plan reads a table: node type and index of every scan of it (its update left out). */
export async function scansOf(client: Pick<pg.ClientBase, "query">, query: { text: string; values?: unknown[] }, table: string) {
  return planNodes(await explain(client, query))
    .filter((n) => n["Node Type"] !== "ModifyTable" && (n["Relation Name"] === table || n["Index Name"]?.startsWith(table)))
    .map((n) => `${n["Node Type"]}${n["Index Name"] ? ` ${n["Index Name"]}` : ""}`);
}
