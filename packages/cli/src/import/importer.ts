// Sends records to POST /api/public/apps/batch in batches (≤ 500 events, < 500 KB), a few at a
// time. Every event gets a deterministic messageId when its line has none, so running the same
// file again (after an interruption) stores nothing twice: the server acknowledges replays.
// Lines are checked here only for what makes an event unusable (no type, no identity); the server
// validates the rest and names bad items (`batch.3.event`), which are rejected and the rest resent.
import { createHash } from "node:crypto";
import type { Api } from "../api.js";
import type { SourceRecord } from "./source.js";

export interface Rejection {
  line: number;
  message: string;
}

export interface ImportStats {
  /** Records read (blank lines not counted). */
  records: number;
  /** Acknowledged by the server (stored now, or already stored by an earlier run). */
  accepted: number;
  rejected: Rejection[];
}

export interface ImportOptions {
  api: Api;
  records: AsyncIterable<SourceRecord[]>;
  /** Identity of the file: with the line number and text, it makes the messageIds. */
  fileId: string;
  /** `type` for records without one. */
  defaultType?: string | undefined;
  concurrency: number;
  maxEvents: number;
  maxBytes: number;
  signal?: AbortSignal;
  onProgress?: (stats: ImportStats) => void;
}

interface Batch {
  lines: number[];
  texts: string[];
  bytes: number;
}

/** The envelope around the events: `{"batch":[…]}`. */
const ENVELOPE_BYTES = 12;

/** cyrb53: a fast 53-bit string hash (not cryptographic; it only tells versions of a line apart). */
function hash53(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

/**
 * A messageId for a record without one, from the file's identity, the line number and the line's
 * text: a re-run of the same file gives every line the same id, a line edited in place (a fixed
 * rejected line) a new one, and another file written to the same path new ids.
 */
export function deriveMessageId(fileId: string, line: number, raw: string): string {
  return `imp-${fileId}-${line}-${hash53(raw)}`;
}

/** Identity of a file for derived ids: a hash of its real path (or of --import-id). */
export function fileIdentity(pathOrId: string): string {
  return createHash("sha256").update(pathOrId).digest("base64url").slice(0, 12);
}

const TYPES = new Set(["identify", "track", "page", "screen", "group", "alias"]);

/** What makes an event unusable, checked before sending; the server checks everything else. */
function problemOf(value: Record<string, unknown>, type: unknown): string | undefined {
  if (type === undefined) return "type: missing (identify, track, page, screen, group or alias; or pass --type)";
  if (typeof type !== "string" || !TYPES.has(type)) return `type: unknown event type ${JSON.stringify(type)}`;
  if (value.userId == null && value.anonymousId == null) return "userId: userId or anonymousId is required";
  return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The JSON text to send for a valid record, with the fields the import adds. */
function eventText(record: SourceRecord, added: Record<string, string>): string {
  const value = record.value!;
  const keys = Object.keys(added);
  if (record.rawIsJson) {
    const raw = record.raw.trim();
    if (keys.length === 0) return raw;
    // Splice the added fields in rather than re-serializing the whole event.
    const head = keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(added[k])}`).join(",");
    return `{${head},${raw.slice(1)}`;
  }
  return JSON.stringify({ ...added, ...value });
}

export async function importEvents(opts: ImportOptions): Promise<ImportStats & { error?: unknown; aborted: boolean }> {
  const stats: ImportStats = { records: 0, accepted: 0, rejected: [] };
  const inFlight = new Set<Promise<void>>();
  let fatal: unknown;
  const reject = (line: number, message: string) => stats.rejected.push({ line, message });

  /** Sends one batch until it is stored (retrying overload and network errors), rejecting bad items. */
  const send = async (batch: Batch): Promise<void> => {
    let attempt = 0;
    let current = batch;
    for (;;) {
      const body = `{"batch":[${current.texts.join(",")}]}`;
      let res: Awaited<ReturnType<Api["postRaw"]>>;
      try {
        res = await opts.api.postRaw(body);
      } catch (err) {
        if (++attempt > 5) throw err;
        await sleep(500 * 2 ** attempt);
        continue;
      }
      if (res.status < 300) {
        stats.accepted += current.lines.length;
        return;
      }
      const error = res.error!;
      if (res.status === 429 || res.status === 503 || res.status >= 500) {
        if (++attempt > (res.status >= 500 && res.status !== 503 ? 3 : 20)) throw error;
        await sleep(res.retryAfter ? res.retryAfter * 1000 : 250 * 2 ** Math.min(attempt, 5));
        continue;
      }
      if (res.status !== 400 && res.status !== 413) throw error;
      // Items the server names (`batch.3.event`) are rejected; the rest is sent again.
      const bad = new Map<number, string>();
      for (const issue of error.issues) {
        const m = /^batch\.(\d+)(?:\.(.*))?$/.exec(issue.path);
        if (!m) continue;
        const i = Number(m[1]);
        if (i >= current.lines.length) continue;
        const message = `${m[2] ? `${m[2]}: ` : ""}${issue.message}`;
        bad.set(i, bad.has(i) ? `${bad.get(i)}; ${message}` : message);
      }
      if (bad.size === 0) {
        if (res.status === 413 && current.lines.length > 1) {
          // The whole request was too large: send each half on its own.
          const mid = Math.ceil(current.lines.length / 2);
          const part = (from: number, to: number): Batch => ({
            lines: current.lines.slice(from, to),
            texts: current.texts.slice(from, to),
            bytes: 0,
          });
          await send(part(0, mid));
          await send(part(mid, current.lines.length));
          return;
        }
        for (const line of current.lines) reject(line, error.message);
        return;
      }
      const keep: Batch = { lines: [], texts: [], bytes: 0 };
      current.lines.forEach((line, i) => {
        const message = bad.get(i);
        if (message !== undefined) reject(line, message);
        else {
          keep.lines.push(line);
          keep.texts.push(current.texts[i]!);
        }
      });
      if (keep.lines.length === 0) return;
      current = keep;
    }
  };

  const dispatch = async (batch: Batch) => {
    while (inFlight.size >= opts.concurrency) await Promise.race(inFlight);
    if (fatal) return;
    const p: Promise<void> = send(batch)
      .catch((err) => {
        fatal ??= err;
      })
      .finally(() => {
        inFlight.delete(p);
        opts.onProgress?.(stats);
      });
    inFlight.add(p);
  };

  let batch: Batch = { lines: [], texts: [], bytes: ENVELOPE_BYTES };
  const flush = async () => {
    if (batch.lines.length === 0) return;
    const full = batch;
    batch = { lines: [], texts: [], bytes: ENVELOPE_BYTES };
    await dispatch(full);
  };

  try {
    outer: for await (const records of opts.records) {
      for (const record of records) {
        if (fatal || opts.signal?.aborted) break outer;
        stats.records++;
        if (record.error !== undefined) {
          reject(record.line, record.error);
          continue;
        }
        const value = record.value!;
        const added: Record<string, string> = {};
        if (value.type === undefined && opts.defaultType) added.type = opts.defaultType;
        const problem = problemOf(value, value.type ?? added.type);
        if (problem) {
          reject(record.line, problem);
          continue;
        }
        if (value.messageId == null) {
          // `"messageId": null` counts as absent; the event is re-serialized without it.
          if (value.messageId === null) {
            delete value.messageId;
            record.rawIsJson = false;
          }
          added.messageId = deriveMessageId(opts.fileId, record.line, record.raw);
        }
        const text = eventText(record, added);
        const bytes = Buffer.byteLength(text) + 1;
        if (batch.lines.length >= opts.maxEvents || (batch.lines.length > 0 && batch.bytes + bytes > opts.maxBytes)) await flush();
        batch.lines.push(record.line);
        batch.texts.push(text);
        batch.bytes += bytes;
      }
      opts.onProgress?.(stats);
    }
    if (!fatal && !opts.signal?.aborted) await flush();
    // Records waiting in an unsent batch were neither accepted nor rejected: not counted.
    else stats.records -= batch.lines.length;
  } catch (err) {
    fatal ??= err;
  }
  await Promise.allSettled([...inFlight]);
  stats.rejected.sort((a, b) => a.line - b.line);
  return { ...stats, aborted: opts.signal?.aborted === true, ...(fatal !== undefined ? { error: fatal } : {}) };
}
