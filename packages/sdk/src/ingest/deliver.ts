// One batch of serialized events to the ingestion endpoint, until each event is stored or has
// failed for good: the retries of sendWithRetry, then what a 400 or 413 says about single events
// (those are set aside and the others sent again) or about the whole request (sent in halves).
import type { ErrorIssue } from "@tidings/schema";
import { isTidingsApiError, networkError, TidingsApiError, withIssues } from "../errors.js";
import { type HttpRequest, parseJson, type RetryPolicy, sendWithRetry, type Transport } from "../http.js";

/** An event ready to send: its JSON text and that text's UTF-8 length. */
export interface WireEvent {
  json: string;
  bytes: number;
}

/** Events of the batch that were not stored, by index, with the error; `batch.k` in its issues names `indexes[k]`. */
export interface DeliveryFailure {
  error: TidingsApiError;
  indexes: number[];
  /** Refused for what they hold (400, 413): sent again unchanged, they would be refused again. */
  rejected: boolean;
}

export interface Delivery {
  accepted: number;
  failures: DeliveryFailure[];
}

/** 408, 429 and 5xx may succeed later; 501 and 505 never will. */
export const retryableStatus = (status: number) => status === 408 || status === 429 || (status >= 500 && status !== 501 && status !== 505);

const ITEM_PATH = /^batch\.(\d+)(?:\.(.*))?$/;

/** The issues grouped by the item they name, or undefined unless every issue names one of `count` items. */
function issuesByItem(error: TidingsApiError, count: number): Map<number, ErrorIssue[]> | undefined {
  if (error.issues.length === 0) return undefined;
  const byItem = new Map<number, ErrorIssue[]>();
  for (const issue of error.issues) {
    const m = ITEM_PATH.exec(issue.path);
    const i = m ? Number(m[1]) : Number.NaN;
    if (!(i < count)) return undefined;
    byItem.set(i, [...(byItem.get(i) ?? []), { path: issue.path, message: issue.message }]);
  }
  return byItem;
}

/** The issues of `error` that name item `k`, with paths relative to it (`(event)` for the item itself). */
export function itemIssues(error: TidingsApiError, k: number): ErrorIssue[] {
  const own: ErrorIssue[] = [];
  for (const issue of error.issues) {
    const m = ITEM_PATH.exec(issue.path);
    if (m && Number(m[1]) === k) own.push({ path: m[2] || "(event)", message: issue.message });
  }
  return own;
}

/** How much one request may carry. */
export interface RequestLimits {
  /** Bytes of a body around its events. */
  envelopeBytes: number;
  maxBatchEvents: number;
  maxBatchBytes: number;
}

/**
 * How many events from `from` on fit one request: at least one (an event too large on its own is
 * sent anyway, and the server answers for it).
 */
export function fitting(events: readonly WireEvent[], from: number, limits: RequestLimits): number {
  let n = 0;
  let bytes = limits.envelopeBytes;
  while (from + n < events.length && n < limits.maxBatchEvents) {
    const next = bytes + events[from + n]!.bytes + (n > 0 ? 1 : 0);
    if (next > limits.maxBatchBytes) break;
    bytes = next;
    n++;
  }
  return Math.max(n, Math.min(1, events.length - from));
}

/**
 * Sends `events`, in requests within `limits` one after the other, with `request` building each
 * attempt, and says what became of each. Never rejects: a failure without an answer is a
 * `NETWORK` failure of the events concerned. Once a request fails for a reason the others would
 * share (a key refused, no server), the events not yet sent fail with it.
 */
export async function deliver(
  transport: Transport,
  request: (events: WireEvent[]) => Promise<HttpRequest>,
  events: readonly WireEvent[],
  policy: Omit<RetryPolicy, "retryable"> & RequestLimits,
): Promise<Delivery> {
  const out: Delivery = { accepted: 0, failures: [] };
  /** Set once a request failed for a reason every other request would share (a key refused, no server). */
  let stopped: TidingsApiError | undefined;

  const send = async (indexes: number[]): Promise<void> => {
    let current = indexes;
    while (current.length > 0) {
      if (stopped) {
        out.failures.push({ error: stopped, indexes: current, rejected: false });
        return;
      }
      let error: TidingsApiError;
      try {
        const batch = current.map((i) => events[i]!);
        const res = await sendWithRetry(transport, () => request(batch), { ...policy, retryable: retryableStatus });
        if (res.status >= 200 && res.status < 300) {
          out.accepted += current.length;
          return;
        }
        error = TidingsApiError.fromResponse(res.status, parseJson(res.body), res.header("x-request-id"));
      } catch (err) {
        error = isTidingsApiError(err) ? err : networkError(err);
      }
      if (error.status !== 400 && error.status !== 413) {
        stopped = error;
        continue;
      }
      const byItem = issuesByItem(error, current.length);
      if (byItem && byItem.size < current.length) {
        // Some items are named: they are refused, the others sent again.
        const bad = [...byItem.keys()].sort((a, b) => a - b);
        // Issue paths are renumbered so that `batch.k` names the k-th item refused.
        const issues = bad.flatMap((i, k) =>
          byItem.get(i)!.map((issue) => ({ ...issue, path: issue.path.replace(/^batch\.\d+/, `batch.${k}`) })),
        );
        const refused = withIssues(error, issues);
        out.failures.push({ error: refused, indexes: bad.map((i) => current[i]!), rejected: true });
        current = current.filter((_, i) => !byItem.has(i));
        continue;
      }
      if (!byItem && error.status === 413 && current.length > 1) {
        // The request as a whole was too large: each half on its own.
        const mid = Math.ceil(current.length / 2);
        await send(current.slice(0, mid));
        await send(current.slice(mid));
        return;
      }
      out.failures.push({ error, indexes: current, rejected: true });
      return;
    }
  };

  for (let from = 0; from < events.length; ) {
    const n = fitting(events, from, policy);
    await send(Array.from({ length: n }, (_, k) => from + k));
    from += n;
  }
  return out;
}
