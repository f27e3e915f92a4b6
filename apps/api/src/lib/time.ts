// Waiting: one sleep (optionally cut short by a stop signal) and one back-off for every retry loop.
import { setTimeout as wait } from "node:timers/promises";

/** Resolves after `ms`, or at once when `stopping` aborts (never rejects). */
export function sleep(ms: number, stopping?: AbortSignal): Promise<void> {
  if (stopping?.aborted) return Promise.resolve();
  return wait(ms, undefined, stopping ? { signal: stopping } : undefined).then(
    () => undefined,
    () => undefined,
  );
}

/** The delay before retry number `attempt` (0 first): `firstMs` doubling per attempt, at most `maxMs`. */
export const backoffMs = (attempt: number, firstMs = 100, maxMs = 2000) => Math.min(maxMs, firstMs * 2 ** Math.min(attempt, 30));

/**
 * Runs `fn` until it succeeds, after `backoffMs(attempt)` between tries, for as long as `ms` have
 * not passed since the first (then the last failure is thrown); `onRetry` hears each failure that
 * is tried again.
 */
export async function retryFor<T>(ms: number, fn: () => Promise<T>, onRetry: (err: unknown) => void): Promise<T> {
  const deadline = Date.now() + ms;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      onRetry(err);
      await sleep(backoffMs(attempt));
    }
  }
}
