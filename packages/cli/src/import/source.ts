// Reads an events file as a stream of records, one per NDJSON line or CSV row, each with its
// line number. Files are read in chunks and split here (faster than readline for large files).
import { createReadStream } from "node:fs";
import { UsageError } from "../errors.js";
import { CsvRows, csvRowToEvent, forbiddenColumns } from "./csv.js";
import type { SourceRecord } from "./record.js";

export type Format = "ndjson" | "csv";

export function formatOf(file: string): Format | undefined {
  if (/\.(ndjson|jsonl|json)$/i.test(file)) return "ndjson";
  if (/\.csv$/i.test(file)) return "csv";
  return undefined;
}

/** Lines of a file, in arrays (one per chunk read), with a running count of characters consumed. */
async function* lines(file: string, onRead: (chars: number) => void): AsyncGenerator<string[]> {
  const stream = createReadStream(file === "-" ? "/dev/stdin" : file, { encoding: "utf8", highWaterMark: 1 << 20 });
  let rest = "";
  for await (const chunk of stream as AsyncIterable<string>) {
    onRead(chunk.length);
    const parts = (rest + chunk).split("\n");
    rest = parts.pop()!;
    yield parts;
  }
  if (rest !== "") yield [rest];
}

function ndjsonRecord(text: string, line: number): SourceRecord | undefined {
  const raw = text.endsWith("\r") ? text.slice(0, -1) : text;
  if (raw.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return { line, raw, error: `invalid JSON: ${(err as Error).message}` };
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) return { line, raw, error: "expected a JSON object" };
  return { line, raw, value: value as Record<string, unknown>, rawIsJson: true };
}

/** Records of an NDJSON or CSV file, in arrays; blank lines are skipped. */
export async function* readRecords(file: string, format: Format, onRead: (chars: number) => void): AsyncGenerator<SourceRecord[]> {
  let lineNo = 0;
  if (format === "ndjson") {
    for await (const batch of lines(file, onRead)) {
      const out: SourceRecord[] = [];
      for (const text of batch) {
        lineNo++;
        const record = ndjsonRecord(text, lineNo);
        if (record) out.push(record);
      }
      yield out;
    }
    return;
  }
  const rows = new CsvRows();
  let header: string[] | undefined;
  for await (const batch of lines(file, onRead)) {
    const out: SourceRecord[] = [];
    for (const text of batch) {
      lineNo++;
      for (const row of rows.push(text, lineNo)) {
        if (!header) {
          header = row.cells;
          const forbidden = forbiddenColumns(header);
          if (forbidden.length > 0) {
            throw new UsageError(`${file}: the CSV header names keys an event may not have`, [
              ...forbidden.map((c) => `column ${JSON.stringify(c)}: __proto__, constructor and prototype are not event fields`),
            ]);
          }
        } else out.push(csvRowToEvent(header, row));
      }
    }
    yield out;
  }
  const last = rows.end();
  if (last && header) yield [csvRowToEvent(header, last)];
  else if (last) yield [{ line: last.line, raw: last.raw, error: "unterminated quoted field" }];
}
