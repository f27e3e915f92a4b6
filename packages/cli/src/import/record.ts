// One record of an events file (an NDJSON line or a CSV row), as the readers (source.ts, csv.ts)
// hand it to the importer.
export interface SourceRecord {
  /** 1-based line number where the record starts. */
  line: number;
  /** The record's text: its identity for deterministic message ids. */
  raw: string;
  /** The parsed event, unless `error`. */
  value?: Record<string, unknown>;
  /** `raw` is exactly the JSON of `value` (NDJSON), so it can be sent without re-serializing. */
  rawIsJson?: boolean;
  error?: string;
}
