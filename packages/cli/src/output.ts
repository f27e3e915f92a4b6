// What commands print: tables and YAML for people, JSON with --json for scripts, progress on
// stderr (a redrawn bar on a terminal, plain lines otherwise).
import { stringify } from "yaml";

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Right-align (numbers). */
  right?: boolean;
  /** Shown only when a row has a value in it (undefined, null or "" is none). */
  optional?: boolean;
}

const cell = (v: unknown): string => {
  if (v === undefined || v === null) return "-";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return JSON.stringify(v);
};

export function formatTable<T>(rows: readonly T[], all: readonly Column<T>[]): string {
  const columns = all.filter((c) => !c.optional || rows.some((r) => ![undefined, null, ""].includes(c.value(r) as never)));
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r)).replace(/\s+/g, " ")));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

/** ms since epoch → `2026-11-23 14:05:09` (UTC). */
export const formatTime = (ms: number | undefined | null): string =>
  typeof ms === "number" ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "-";

/** Shortens a one-line rendering of `v` to `max` characters. */
export const truncate = (v: unknown, max = 60): string => {
  const s = cell(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

export class Output {
  constructor(readonly json: boolean) {}

  /** A line of text on stdout (commands print `data` instead under --json). */
  line(text = ""): void {
    process.stdout.write(`${text}\n`);
  }

  data(value: unknown): void {
    process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  yaml(value: unknown): void {
    process.stdout.write(stringify(value, { lineWidth: 0 }));
  }

  table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = "(none)"): void {
    this.line(rows.length ? formatTable(rows, columns) : empty);
  }

  /** A note for people on stderr (hints, "more pages"); never mixed into data on stdout. */
  note(text: string): void {
    process.stderr.write(`${text}\n`);
  }
}

/**
 * Progress on stderr. On a terminal, one line redrawn at most 10 times a second; otherwise a
 * plain line at most every `plainEveryMs`, so logs stay readable.
 */
export class Progress {
  private readonly tty = process.stderr.isTTY === true;
  private last = 0;
  private lastText = "";
  private drawn = false;

  constructor(private readonly plainEveryMs = 2000) {}

  update(text: string, force = false): void {
    const now = Date.now();
    if (this.tty) {
      if (!force && now - this.last < 100) return;
      const width = process.stderr.columns || 100;
      process.stderr.write(`\r\x1b[K${text.length >= width ? text.slice(0, width - 1) : text}`);
      this.drawn = true;
    } else {
      if (text === this.lastText || (!force && now - this.last < this.plainEveryMs)) return;
      process.stderr.write(`${text}\n`);
    }
    this.last = now;
    this.lastText = text;
  }

  /** Ends the redrawn line (terminal) so later output starts on a fresh line. */
  done(text?: string): void {
    if (text !== undefined) this.update(text, true);
    if (this.tty && this.drawn) process.stderr.write("\n");
    this.drawn = false;
  }
}

/** `[██████░░░░]` for a fraction 0–1. */
export function bar(fraction: number, width = 24): string {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const full = Math.round(f * width);
  return `[${"█".repeat(full)}${"░".repeat(width - full)}]`;
}
