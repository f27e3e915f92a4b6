// Sends records to POST /api/public/apps/batch in batches of at most --batch-size events, a few at
// a time, through the SDK's `sendBatch` (which keeps requests under 500 KB, retries what may
// succeed later and sets aside the events the server refuses). Every event gets a deterministic
// messageId when its line has none, so running the same file again (after an interruption) stores
// nothing twice: the server acknowledges replays. Lines are checked here only for what makes an
// event unusable (no type, no identity); the server validates the rest and names bad items.
import { createHash } from "node:crypto";
import type { TidingsApiError } from "@tidings/sdk";
import type { Api } from "../api.js";
import type { SourceRecord } from "./record.js";

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
  signal?: AbortSignal;
  onProgress?: (stats: ImportStats) => void;
}

interface Batch {
  lines: number[];
  texts: string[];
}

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

/** Why a line was refused: the issues naming its event (`event: Required`), else the server's message. */
function rejection(error: TidingsApiError): string {
  if (error.issues.length === 0) return error.message;
  return error.issues.map((i) => (i.path === "(event)" ? i.message : `${i.path}: ${i.message}`)).join("; ");
}

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

  /** Sends one batch; an event that could not be delivered (after the SDK's retries) stops the import. */
  const send = async (batch: Batch): Promise<void> => {
    const result = await opts.api.sendEvents(batch.texts);
    stats.accepted += result.accepted;
    for (const { index, error } of result.rejected) reject(batch.lines[index]!, rejection(error));
    if (result.undelivered.length > 0) throw result.undelivered[0]!.error;
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

  let batch: Batch = { lines: [], texts: [] };
  const flush = async () => {
    if (batch.lines.length === 0) return;
    const full = batch;
    batch = { lines: [], texts: [] };
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
        if (batch.lines.length >= opts.maxEvents) await flush();
        batch.lines.push(record.line);
        batch.texts.push(eventText(record, added));
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
