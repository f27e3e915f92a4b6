// CSV rows (RFC 4180: comma-separated, "quoted" cells may hold commas, "" and line breaks) and
// their mapping to events: a header row names each column.
//   type, userId, anonymousId, messageId, event, name, groupId, previousId, timestamp, …  → top-level fields
//   traits, properties, context, integrations                  → a JSON object
//   traits.plan, properties.price, context.ip (dotted names)   → nested fields; a cell that is a
//                                                                JSON number, true, false or null
//                                                                is typed, anything else is a string
// Empty cells are left out.
import type { SourceRecord } from "./record.js";

export interface CsvRow {
  line: number;
  raw: string;
  cells: string[];
}

/** Splits lines into rows; a row continues over lines while a quoted cell is open. */
export class CsvRows {
  private pending: { line: number; text: string } | undefined;

  push(text: string, line: number): CsvRow[] {
    const clean = text.endsWith("\r") ? text.slice(0, -1) : text;
    const start = this.pending ?? { line, text: "" };
    const joined = this.pending ? `${start.text}\n${clean}` : clean;
    if (countQuotes(joined) % 2 === 1) {
      this.pending = { line: start.line, text: joined };
      return [];
    }
    this.pending = undefined;
    if (joined.trim() === "") return [];
    return [{ line: start.line, raw: joined, cells: splitCells(joined) }];
  }

  /** A row left open at the end of the file (an unterminated quote). */
  end(): CsvRow | undefined {
    const p = this.pending;
    this.pending = undefined;
    return p ? { line: p.line, raw: p.text, cells: [] } : undefined;
  }
}

function countQuotes(s: string): number {
  let n = 0;
  for (let i = s.indexOf('"'); i !== -1; i = s.indexOf('"', i + 1)) n++;
  return n;
}

function splitCells(row: string): string[] {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (row[i] === '"') {
      let value = "";
      i++;
      for (;;) {
        const q = row.indexOf('"', i);
        if (q === -1) {
          value += row.slice(i);
          i = row.length;
          break;
        }
        value += row.slice(i, q);
        if (row[q + 1] === '"') {
          value += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      const comma = row.indexOf(",", i);
      cells.push(value + (comma === -1 ? row.slice(i) : row.slice(i, comma)));
      if (comma === -1) return cells;
      i = comma + 1;
    } else {
      const comma = row.indexOf(",", i);
      if (comma === -1) {
        cells.push(row.slice(i));
        return cells;
      }
      cells.push(row.slice(i, comma));
      i = comma + 1;
    }
  }
}

const OBJECT_COLUMNS = new Set(["traits", "properties", "context", "integrations"]);
const JSON_LITERAL = /^(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null)$/;

/** Keys a dotted column may not name: they would reach the prototype of the objects built from it. */
const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** The header's columns that name a forbidden key (e.g. `__proto__.x`), each once. */
export function forbiddenColumns(header: string[]): string[] {
  return header.map((c) => c.trim()).filter((column) => column.split(".").some((key) => FORBIDDEN_KEYS.has(key)));
}

export function csvRowToEvent(header: string[], row: CsvRow): SourceRecord {
  const { line, raw, cells } = row;
  if (cells.length > header.length) return { line, raw, error: `${cells.length} cells but the header names ${header.length} columns` };
  const event: Record<string, unknown> = {};
  for (let i = 0; i < cells.length; i++) {
    const column = header[i]!.trim();
    const cell = cells[i]!;
    if (cell === "" || column === "") continue;
    if (OBJECT_COLUMNS.has(column)) {
      let value: unknown;
      try {
        value = JSON.parse(cell);
      } catch {
        return { line, raw, error: `${column}: expected a JSON object` };
      }
      if (!value || typeof value !== "object" || Array.isArray(value)) return { line, raw, error: `${column}: expected a JSON object` };
      event[column] = { ...(event[column] as object | undefined), ...(value as object) };
      continue;
    }
    const path = column.split(".");
    if (path.length === 1) {
      event[column] = cell;
      continue;
    }
    let target = event;
    for (const key of path.slice(0, -1)) {
      const next = target[key];
      if (next === undefined) target = target[key] = {} as Record<string, unknown>;
      else if (next && typeof next === "object" && !Array.isArray(next)) target = next as Record<string, unknown>;
      else return { line, raw, error: `${column}: ${key} is not an object` };
    }
    target[path[path.length - 1]!] = JSON_LITERAL.test(cell) ? JSON.parse(cell) : cell;
  }
  return { line, raw, value: event };
}
