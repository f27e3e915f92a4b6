// retryFor: the one retry loop of the mark and of a lease's hold (messaging).
import { describe, expect, it } from "vitest";
import { retryFor } from "../../src/lib/time.ts";

describe("retryFor", () => {
  it("tries again after each failure until the call succeeds, telling each failure", async () => {
    const heard: string[] = [];
    let calls = 0;
    const result = await retryFor(
      10_000,
      async () => {
        calls++;
        if (calls < 3) throw new Error(`down ${calls}`);
        return "done";
      },
      (err) => heard.push((err as Error).message),
    );
    expect(result).toBe("done");
    expect(calls).toBe(3);
    expect(heard).toEqual(["down 1", "down 2"]);
  });

  it("throws the last failure once its time is up", async () => {
    let calls = 0;
    const started = Date.now();
    const failure = await retryFor(
      250,
      async () => {
        calls++;
        throw new Error(`down ${calls}`);
      },
      () => {},
    ).catch((err: Error) => err);
    expect(calls).toBeGreaterThan(1);
    // The last call's failure, not the first one's.
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toBe(`down ${calls}`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
