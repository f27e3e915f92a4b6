// Data that refreshes by itself: `load` runs now and every `everyMs` while the page shows it.
import { useCallback, useEffect, useRef, useState } from "react";

export const REFRESH_MS = 2000;

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** Loads again at once (after an action). */
  reload(): void;
}

export function usePoll<T>(load: () => Promise<T>, deps: unknown[], everyMs = REFRESH_MS): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const loadRef = useRef(load);
  loadRef.current = load;
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `deps` and `tick` decide when to start over
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const value = await loadRef.current();
        if (live) {
          setData(value);
          setError(undefined);
        }
      } catch (err) {
        if (live) setError(err instanceof Error ? err.message : String(err));
      }
      if (live) timer = setTimeout(run, everyMs);
    };
    void run();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [...deps, tick, everyMs]);
  return { data, error, reload };
}
