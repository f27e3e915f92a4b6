// The deliverer's read cache: one read per window, shared; a failed read is never served again.
import { describe, expect, it } from "vitest";
import { ReadCache } from "../../src/messaging/read-cache.ts";

describe("ReadCache", () => {
  it("reads once per window for every caller", async () => {
    const cache = new ReadCache<number>(60_000);
    let reads = 0;
    const load = async () => ++reads;
    expect(await Promise.all([cache.get("k", load), cache.get("k", load)])).toEqual([1, 1]);
    expect(await cache.get("k", load)).toBe(1);
    expect(await cache.get("other", load)).toBe(2);
  });

  it("does not keep a failed read: the next caller reads again", async () => {
    const cache = new ReadCache<string>(60_000);
    await expect(cache.get("k", () => Promise.reject(new Error("database away")))).rejects.toThrow("database away");
    await new Promise((r) => setTimeout(r, 0));
    expect(await cache.get("k", async () => "back")).toBe("back");
  });

  it("reads again once the window has passed", async () => {
    const cache = new ReadCache<number>(0);
    let reads = 0;
    const load = async () => ++reads;
    await cache.get("a", load);
    await cache.get("a", load);
    expect(reads).toBe(2);
  });
});
