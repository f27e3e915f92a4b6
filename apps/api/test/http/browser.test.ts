// A real browser sends events: headless Chromium loads a page from another origin whose script
// POSTs with fetch (preflighted: Authorization) and with navigator.sendBeacon (text/plain).
// Needs a Chromium binary (Debian package `chromium`, or CHROME_PATH); skips, saying so, without one.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../support/app.ts";
import { findChrome, launchChrome } from "./chrome.ts";

const chrome = findChrome();
const SKIP_REASON =
  "no Chromium found (looked for CHROME_PATH, chromium, chromium-browser, google-chrome on PATH); install the Debian package `chromium`";
if (!chrome) console.warn(`browser.test.ts skipped: ${SKIP_REASON}`);

/** The page's script; its outcome is `window.outcome`. */
function page(api: string, writeKey: string, adminKey: string, ids: { fetched: string; beacon: string }): string {
  const script = `
window.outcome = (async () => {
  const api = ${JSON.stringify(api)}, writeKey = ${JSON.stringify(writeKey)};
  const res = await fetch(api + "/api/public/apps/track", {
    method: "POST",
    headers: { Authorization: "Basic " + writeKey, "Content-Type": "application/json" },
    body: JSON.stringify({ userId: "browser-user", event: "Fetched", messageId: ${JSON.stringify(ids.fetched)} }),
  });
  const fetched = { status: res.status, requestId: res.headers.get("x-request-id") };
  const queued = navigator.sendBeacon(api + "/v1/track", new Blob(
    [JSON.stringify({ writeKey, userId: "browser-user", event: "Beaconed", messageId: ${JSON.stringify(ids.beacon)} })],
    { type: "text/plain" },
  ));
  let admin;
  try {
    admin = (await fetch(api + "/api/admin/segments", { headers: { Authorization: "Bearer " + ${JSON.stringify(adminKey)} } })).status;
  } catch (err) {
    admin = err.name;
  }
  return { origin: location.origin, fetched, queued, admin };
})().catch((err) => ({ error: String(err) }));`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>shop</title></head><body><script>${script}</script></body></html>`;
}

describe.skipIf(!chrome)(chrome ? "a page on another origin in Chromium" : `a page in Chromium — SKIPPED: ${SKIP_REASON}`, () => {
  let t: TestApp;
  let browser: Browser;
  let site: http.Server;
  let html = "";

  beforeAll(async () => {
    t = await createTestApp();
    site = http.createServer((_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html));
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    browser = await launchChrome(chrome!);
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
    await t?.close();
  });

  it("stores the events sent with fetch and sendBeacon, and the page reads the fetch's answer", async () => {
    const ids = { fetched: `fetch-${randomUUID()}`, beacon: `beacon-${randomUUID()}` };
    html = page(t.url, t.workspace.writeKey, t.workspace.adminKey, ids);
    const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    expect(new URL(siteUrl).origin).not.toBe(new URL(t.url).origin);

    const tab = await browser.newPage();
    await tab.goto(siteUrl);
    const outcome = await tab.evaluate(() => (globalThis as unknown as { outcome: Promise<unknown> }).outcome);
    expect(outcome).toEqual({
      origin: new URL(siteUrl).origin,
      fetched: { status: 204, requestId: expect.stringMatching(/^[0-9a-f-]{36}$/) },
      queued: true,
      // The admin API answers no CORS by default: the browser refuses the page its response.
      admin: "TypeError",
    });

    // The beacon is sent in the background; wait for it to be stored.
    const stored = async () =>
      (
        await t.ctx.db.pool.query<{ message_id: string; event: string }>(
          "SELECT message_id, event FROM events WHERE workspace_id = $1 AND message_id = ANY($2) ORDER BY event",
          [t.workspace.id, [ids.fetched, ids.beacon]],
        )
      ).rows;
    const deadline = Date.now() + 10_000;
    while ((await stored()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await stored()).toEqual([
      { message_id: ids.beacon, event: "Beaconed" },
      { message_id: ids.fetched, event: "Fetched" },
    ]);
  });
});
