// The web console in a real headless Chromium, served by the server at /console: sign-in with an
// admin key; a journey's graph whose per-node counts change by themselves when a delay expires;
// a broadcast's progress to completion; pause and resume (from the keyboard alone too); why a user
// got no message, from their page (with the segment they left) and from the deliveries; a
// segment's size chart. Each page is checked by axe-core (no serious or critical violation), logs
// no console error (a CSP refusal would be one), and is kept as a screenshot in
// test-results/console/ (CI keeps it as an artifact; never compared).
// Needs the console built (`pnpm build`) and a Chromium, like test/http/browser.test.ts.
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findConsole } from "../../src/http/console.ts";
import { waitFor } from "../broadcasts/support.ts";
import { findChrome, launchChrome } from "../http/chrome.ts";
import { identify, segmentWorld, TestClock, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { request } from "../support/http.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";

const chrome = findChrome();
const built = findConsole(undefined);
const SKIP = !chrome ? "no Chromium found (see test/http/chrome.ts)" : !built ? "the console is not built (pnpm build)" : "";
if (SKIP) console.warn(`console.test.ts skipped: ${SKIP}`);

const SHOTS = path.join(import.meta.dirname, "../../test-results/console");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let t: TestApp;
let browser: Browser;
let receiver: Receiver;

/** A tab that records console errors and page errors. */
async function tab(width = 1280, height = 800) {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return { page, errors };
}

/** No serious or critical accessibility violation on the page as it is now. */
async function accessible(page: Page) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(): Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] }> };
      }
    ).axe;
    return (await axe.run()).violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
  });
  expect(violations).toEqual([]);
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) as `${string}.png`, fullPage: true });

async function signIn(page: Page, key: string, base = t.url) {
  await page.goto(`${base}/console/`);
  await page.waitForSelector("#key");
  await page.type("#key", key);
  await page.click("button[type=submit]");
}

/** The page's document, in code that runs in the browser (the tests compile without the DOM's types). */
type Doc = { querySelector(selector: string): { textContent: string | null } | null };

/** Waits until the element at `selector` reads `text`. */
const reads = (page: Page, selector: string, text: string, timeout = 10_000) =>
  page.waitForFunction(
    (sel: string, want: string) => (globalThis as unknown as { document: Doc }).document.querySelector(sel)?.textContent === want,
    { timeout },
    selector,
    text,
  );

/** The text of the count `name` on the journey graph's node `id`. */
const nodeCount = (page: Page, id: string, name: string) =>
  page.$eval(`g[data-node="${id}"] text[data-count="${name}"]`, (el) => el.textContent ?? "").catch(() => "");

describe.skipIf(SKIP !== "")(SKIP ? `the console — SKIPPED: ${SKIP}` : "the console in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    receiver = await startReceiver((_r, res) => res.writeHead(200).end());
    t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
    browser = await launchChrome(chrome!);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it("is served at /console with a strict Content-Security-Policy", async () => {
    const page = await request(t.url, "GET", "/console/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toMatch(/default-src 'none'; script-src 'self'/);
    expect(page.text).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)/);
    const bare = await fetch(`${t.url}/console`, { redirect: "manual" });
    expect([bare.status, bare.headers.get("location")]).toEqual([302, "/console/"]);
  });

  it("refuses a wrong key, signs in with an admin key, and keeps it for the tab only", async () => {
    const { page, errors } = await tab();
    await signIn(page, "not-a-key");
    await page.waitForSelector("[role=alert]");
    await accessible(page);
    await shot(page, "sign-in-refused");
    await page.$eval("#key", (el) => {
      (el as unknown as { value: string }).value = "";
    });
    await page.type("#key", t.workspace.adminKey);
    await page.click("button[type=submit]");
    await page.waitForSelector("#journeys-title");
    expect(await page.evaluate(() => Object.keys((globalThis as unknown as { localStorage: object }).localStorage))).toEqual([]);
    // A 401 is logged by the browser as a failed resource: the only error allowed here.
    expect(errors.filter((e) => !/401/.test(e))).toEqual([]);
    await page.close();
  });

  it("draws a journey with users waiting at a delay, and the counts move by themselves when it expires", { timeout: 60_000 }, async () => {
    const w = await segmentWorld(t);
    const template = await w.admin("PUT", "/api/admin/content/templates", {
      name: "Welcome hook",
      definition: { type: "Webhook", url: `${receiver.url}/welcome`, method: "POST", body: '{"user":"{{ user.id }}"}' },
    });
    const journey = await w.admin("PUT", "/api/admin/journeys", {
      name: "Onboarding",
      status: "Running",
      definition: {
        entryNode: { type: "EventEntryNode", event: "Signed Up", child: "wait" },
        nodes: [
          { id: "wait", type: "DelayNode", variant: { type: "Second", seconds: 6 }, child: "welcome" },
          { id: "welcome", type: "MessageNode", channel: "Webhook", templateId: template.id, child: "ExitNode" },
        ],
      },
    });
    const users = ["ann", "bob", "cy"];
    await w.send(users.map((u) => identify(u, { plan: "pro" }, Date.now() - 1000)));
    await w.send(users.map((u) => track({ userId: u }, "Signed Up", Date.now())));

    const { page, errors } = await tab();
    await signIn(page, w.ws.adminKey);
    await page.waitForSelector("#journeys-title");
    await page.waitForSelector(`a[href="#/journeys/${journey.id}"]`);
    await shot(page, "journeys");
    await accessible(page);
    await page.click(`a[href="#/journeys/${journey.id}"]`);
    await page.waitForSelector('g[data-node="wait"]');
    await reads(page, 'g[data-node="wait"] text[data-count="waiting"]', "waiting 3");
    expect(await nodeCount(page, "welcome", "sent")).toBe("sent 0");
    await shot(page, "journey-waiting");
    await accessible(page);
    // No reload: the page refreshes itself.
    await reads(page, 'g[data-node="welcome"] text[data-count="sent"]', "sent 3", 30_000);
    expect(await nodeCount(page, "wait", "waiting")).toBe("waiting 0");
    expect(await page.$eval('[data-testid="runs-completed"]', (el) => el.textContent)).toBe("3");
    await shot(page, "journey-done");

    await page.click("::-p-text(Pause)");
    await reads(page, '[data-testid="journey-status"]', "Paused");
    expect((await w.admin("GET", `/api/admin/journeys/${journey.id}`)).status).toBe("Paused");
    await page.click("::-p-text(Resume)");
    await reads(page, '[data-testid="journey-status"]', "Running");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows on a user's page why they got no message, and finds it among the deliveries", { timeout: 60_000 }, async () => {
    const w = await segmentWorld(t);
    await w.send([identify("zoe", { plan: "pro" }, Date.now() - 1000)]); // no phone trait
    // She was on a trial, and left it.
    const trial = await w.segment(undefined, "Trial");
    for (const change of [{ add: ["zoe"] }, { remove: ["zoe"] }]) {
      await w.admin("PUT", `/api/admin/segments/${trial}/members`, change);
      await w.settle();
    }
    const { broadcastId } = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "Texts",
      segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      messageTemplateDefinition: { type: "Sms", body: "Hi" },
    });
    const { page, errors } = await tab();
    await signIn(page, w.ws.adminKey);
    await page.waitForSelector("#journeys-title");
    await page.goto(`${t.url}/console/#/users/zoe`);
    await page.waitForSelector("#user-title");
    await page.waitForFunction(
      () =>
        [
          ...(
            globalThis as unknown as { document: { querySelectorAll(s: string): { textContent: string | null }[] } }
          ).document.querySelectorAll('.timeline li[data-kind="delivery"]'),
        ].some((li) => /Skipped/.test(li.textContent ?? "") && /no phone trait/.test(li.textContent ?? "")),
      { timeout: 20_000 },
    );
    const segmentMoments = await page.$$eval('.timeline li[data-kind="segment"]', (lis) => lis.map((li) => li.textContent ?? ""));
    expect(segmentMoments.filter((m) => /segment Trial/.test(m)).map((m) => /left/.test(m))).toEqual([true, false]);
    await accessible(page);
    await shot(page, "user");
    await page.click('a[href="#/deliveries"]');
    await page.waitForSelector("#deliveries-title");
    await page.type('input[placeholder="user id"]', "zoe");
    await page.type('input[placeholder="broadcast id, or journey:ID"]', broadcastId);
    await page.click(".filters button[type=submit]");
    await reads(page, "span[data-reason]", "no phone trait");
    await accessible(page);
    await shot(page, "deliveries");
    // A template previewed for her: the variable she has no value for is flagged.
    await w.admin("PUT", "/api/admin/content/templates", { name: "Greeting", definition: { type: "Sms", body: "Hi {{ user.nickname }}" } });
    await page.click('a[href="#/templates"]');
    await page.waitForSelector("#templates-title");
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll(
          "select option",
        ).length > 1,
    );
    const greeting = await page.$$eval(
      "select option",
      (options) => options.find((o) => o.textContent === "Greeting")?.getAttribute("value") ?? "",
    );
    await page.select("select", greeting);
    await page.type('input[placeholder="user id"]', "zoe");
    await page.click("button[type=submit]");
    await page.waitForSelector('[data-unresolved*="nickname"]');
    await accessible(page);
    await shot(page, "template-preview");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("works from the keyboard alone: sign in, open a journey, pause it", { timeout: 60_000 }, async () => {
    const w = await segmentWorld(t);
    const journey = await w.admin("PUT", "/api/admin/journeys", {
      name: "Keyboard journey",
      status: "Running",
      definition: { entryNode: { type: "EventEntryNode", event: "Go", child: "ExitNode" }, nodes: [] },
    });
    const { page, errors } = await tab();
    await page.goto(`${t.url}/console/`);
    await page.waitForSelector("#key");
    /** Presses Tab until the focused element matches `selector` (as a user would, at most 30 times). */
    const tabTo = async (selector: string) => {
      for (let i = 0; i < 30; i++) {
        await page.keyboard.press("Tab");
        const there = await page.evaluate(
          (sel: string) =>
            (
              globalThis as unknown as { document: { activeElement: { matches(s: string): boolean } | null } }
            ).document.activeElement?.matches(sel) ?? false,
          selector,
        );
        if (there) return;
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    await tabTo("#key");
    await page.keyboard.type(w.ws.adminKey);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#journeys-title");
    await page.waitForSelector(`a[href="#/journeys/${journey.id}"]`);
    await tabTo(`a[href="#/journeys/${journey.id}"]`);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#journey-title");
    await tabTo("button");
    expect(
      await page.evaluate(
        () => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent,
      ),
    ).toBe("Pause");
    await page.keyboard.press("Enter");
    await waitFor(
      () => w.admin("GET", `/api/admin/journeys/${journey.id}`),
      (j: { status: string }) => j.status === "Paused",
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it("shows a broadcast's progress to completion, at a phone's width too", { timeout: 60_000 }, async () => {
    const w = await segmentWorld(t);
    await w.send(Array.from({ length: 40 }, (_, i) => identify(`u-${i}`, { plan: "pro" }, Date.now() - 1000)));
    const { page, errors } = await tab(390, 844);
    await signIn(page, w.ws.adminKey);
    await page.waitForSelector("#journeys-title");
    await page.goto(`${t.url}/console/#/broadcasts`);
    await page.waitForSelector("#broadcasts-title");
    const { broadcastId } = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: "Spring sale",
      segmentDefinition: { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      messageTemplateDefinition: { type: "Webhook", url: `${receiver.url}/sale`, method: "POST", body: "{}" },
      rateLimitPerSecond: 10,
    });
    await page.waitForSelector('[data-broadcast="Spring sale"]');
    await shot(page, "broadcast-running");
    await accessible(page);
    await reads(page, '[data-broadcast="Spring sale"] [data-testid="broadcast-status"]', "Completed", 30_000);
    expect(await page.$eval('[data-broadcast="Spring sale"] dd[data-count="sent"]', (el) => el.textContent)).toBe("40");
    await shot(page, "broadcast-completed");
    await waitFor(
      () => w.admin("GET", `/api/admin/broadcasts/${broadcastId}`),
      (b: { status: string }) => b.status === "Completed",
    );
    expect(errors).toEqual([]);
    await page.close();
  });
});

describe.skipIf(SKIP !== "")(SKIP ? `a segment in the console — SKIPPED: ${SKIP}` : "a segment in the console", () => {
  // The segment engine's clock starts a day ago and moves an hour at a time: users enter over time.
  const HOUR = 3_600_000;
  const clock = new TestClock(Math.floor((Date.now() - 24 * HOUR) / HOUR) * HOUR + 60_000);
  let app: TestApp;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    app = await createTestApp({ clock: clock.read });
    browser = await launchChrome(chrome!);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it("draws its definition, its size over the hours users entered, and finds a member", { timeout: 60_000 }, async () => {
    const w = await segmentWorld(app);
    const id = await w.segment(
      { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      "Pro users",
    );
    for (let hour = 0; hour < 4; hour++) {
      await w.send(Array.from({ length: hour + 1 }, (_, i) => identify(`h${hour}-u${i}`, { plan: "pro" }, clock.now)));
      await w.settle();
      clock.advance(HOUR);
    }
    const { page, errors } = await tab();
    await signIn(page, w.ws.adminKey, app.url);
    await page.waitForSelector("#journeys-title");
    await page.click('a[href="#/segments"]');
    await reads(page, '[data-segment-size="Pro users"]', "10");
    await page.click(`a[href="#/segments/${id}"]`);
    await reads(page, '[data-testid="segment-size"]', "10");
    // One point per hour in which the size changed, rising 1, 3, 6, 10.
    await page.waitForSelector(".chart polyline[data-points]");
    const attribute: string = await page.$eval(".chart polyline", (el) => el.getAttribute("points") ?? "");
    const points: number[] = attribute.split(" ").map((p) => Number(p.split(",")[1]));
    const distinct = [...new Set(points)];
    expect(distinct.length).toBeGreaterThanOrEqual(4);
    expect([...distinct].sort((a: number, b: number) => b - a)).toEqual(distinct); // y falls as the size grows
    expect(await page.$eval(".tree", (el) => el.textContent)).toContain("Trait");
    await page.type('input[type="search"]', "h3-u2");
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll(
          ".members li",
        ).length === 1,
    );
    await accessible(page);
    await shot(page, "segment");
    expect(errors).toEqual([]);
    await page.close();
  });
});
