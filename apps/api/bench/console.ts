// bench:console — how long the web console takes to load from the local server, in a headless
// Chromium, signed in, with BENCH_CONSOLE_JOURNEYS journeys (default 20): from navigation start
// until the journeys page shows its table (the bundle fetched, parsed and run, the list asked of the
// admin API through the SDK, the rows drawn), and until every row's run counts are in (one stats
// request per journey). BENCH_CONSOLE_LOADS loads (default 10), each in a
// fresh browser context (an empty cache: every byte comes from the server), after one warm-up.
// Prints the median and the slowest (target: under a second, PRODUCT §14).
import { findChrome, launchChrome } from "../test/http/chrome.ts";
import { startBenchServer, summaryLine as line } from "./support.ts";

const JOURNEYS = Number(process.env.BENCH_CONSOLE_JOURNEYS ?? 20);
const LOADS = Number(process.env.BENCH_CONSOLE_LOADS ?? 10);

/** What the page functions below touch in the browser (this package's types have no DOM). */
type Browser = {
  sessionStorage: { setItem(key: string, value: string): void };
  document: { querySelectorAll(s: string): { length: number }; querySelector(s: string): { textContent: string | null } | null };
};

async function main() {
  const chrome = findChrome();
  if (!chrome) throw new Error("bench:console needs a Chromium (Debian package chromium, or CHROME_PATH)");
  const bench = await startBenchServer("console");
  const browser = await launchChrome(chrome);
  try {
    for (let i = 0; i < JOURNEYS; i++) {
      await bench.admin("PUT", "/api/admin/journeys", {
        name: `Journey ${i}`,
        definition: { entryNode: { type: "EventEntryNode", event: `Event ${i}`, child: "ExitNode" }, nodes: [] },
      });
    }
    const load = async () => {
      const context = await browser.createBrowserContext();
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on("console", (m) => {
          if (m.type() === "error") errors.push(m.text());
        });
        await page.evaluateOnNewDocument((key: string) => {
          (globalThis as unknown as Browser).sessionStorage.setItem("tidings.console.adminKey", key);
        }, bench.adminKey);
        await page.goto(`${bench.base}/console/`);
        await page.waitForFunction(
          (n: number) => (globalThis as unknown as Browser).document.querySelectorAll("table tbody tr").length === n,
          { timeout: 10_000 },
          JOURNEYS,
        );
        const drawn = await page.evaluate(() => performance.now());
        await page.waitForFunction(
          () => !(globalThis as unknown as Browser).document.querySelector("table tbody")?.textContent?.includes("…"),
          { timeout: 10_000 },
        );
        const counted = await page.evaluate(() => performance.now());
        if (errors.length > 0) throw new Error(`the console logged errors: ${errors.join("; ")}`);
        return { drawn, counted };
      } finally {
        await context.close();
      }
    };
    await load();
    const loads: { drawn: number; counted: number }[] = [];
    for (let i = 0; i < LOADS; i++) loads.push(await load());
    console.log(`journeys table drawn (ms): ${loads.map((l) => l.drawn.toFixed(0)).join(", ")}`);
    console.log(`every run count in (ms):   ${loads.map((l) => l.counted.toFixed(0)).join(", ")}`);
    console.log("\n=== bench:console ===");
    for (const [what, key] of [
      ["the journeys table drawn", "drawn"],
      ["every journey's run counts in", "counted"],
    ] as const) {
      const times = loads.map((l) => l[key]).sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      const slowest = times[times.length - 1]!;
      line(`${what}, median of ${LOADS}`, `${median.toFixed(0)} ms`, "< 1 000 ms", median < 1000, 48);
      line(`${what}, slowest`, `${slowest.toFixed(0)} ms`, "< 1 000 ms", slowest < 1000, 48);
    }
  } finally {
    await browser.close();
    await bench.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
