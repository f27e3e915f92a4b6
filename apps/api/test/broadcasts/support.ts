// What the broadcast tests share: polling until a condition holds, a broadcast's end, an inline
// `plan` segment.
import type { SegmentWorld } from "../segments/support.ts";

/**
 * Reads until `done` holds and returns that value; after `ms` it throws with the last value read (a
 * caller that went on instead would test nothing of what it waited for).
 */
export async function waitFor<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms in vain; last read: ${JSON.stringify(v)?.slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const getBroadcast = (w: SegmentWorld, id: string): Promise<any> => w.admin("GET", `/api/admin/broadcasts/${id}`);
export const finished = (b: any) => ["Completed", "Failed", "Cancelled"].includes(b.status);
/** The broadcast once it has ended (`waitFor`: it throws if it has not after `ms`). */
export const broadcastEnd = (w: SegmentWorld, id: string, ms?: number) => waitFor(() => getBroadcast(w, id), finished, ms);

/** An inline segment: `plan` equals `value`. */
export const plan = (value: string) => ({
  entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value } },
  nodes: [],
});
