// The warning a template PUT (and each template of an apply) answers when its webhook URL is one
// the send-time guard refuses: IP literals, and host names resolved as sends resolve them (the
// system resolver, so /etc/hosts counts), honouring TIDINGS_WEBHOOK_ALLOWED_HOSTS. The template
// is saved either way.
import { lookup } from "node:dns/promises";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forbiddenAddressKind, OutboundGuard } from "../../src/outbound/guard.ts";
import { webhookWarnings } from "../../src/templates/webhook-warnings.ts";
import { createTestApp, type TestApp, type TestWorkspace } from "../support/app.ts";
import { bearer, request } from "../support/http.ts";

const PATH = "/api/admin/content/templates";
/** A name that resolves, here, to a loopback or private address: the machine's own, or else `localhost`. */
let localName: string;
let t: TestApp;
/** A second server on the same database whose allow-list names `localName`. */
let allowing: TestApp;
let ws: TestWorkspace;

beforeAll(async () => {
  const hostname = os.hostname().toLowerCase();
  const addresses = await lookup(hostname, { all: true }).catch(() => []);
  localName = addresses.length > 0 && addresses.every((a) => forbiddenAddressKind(a.address)) ? hostname : "localhost";
  // The precondition the tests rest on: the name resolves, and only to addresses the guard refuses.
  const resolved = await lookup(localName, { all: true });
  expect(resolved.every((a) => forbiddenAddressKind(a.address))).toBe(true);
  t = await createTestApp();
  allowing = await createTestApp({ databaseUrl: t.databaseUrl, outboundAllowedHosts: [localName] });
  ws = await t.newWorkspace();
});
afterAll(async () => {
  await allowing?.close();
  await t?.close();
});

const put = (app: TestApp, name: string, url: string) =>
  request(app.url, "PUT", PATH, {
    headers: bearer(ws.adminKey),
    body: { workspaceId: ws.id, name, definition: { type: "Webhook", method: "POST", url } },
  });

describe("a template's webhook URL checked at PUT", () => {
  it("a host name that resolves to a loopback or private address is saved with a warning", async () => {
    const res = await put(t, "Local name", `http://${localName}:8080/hook`);
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual([
      {
        path: "definition.url",
        message: expect.stringMatching(
          new RegExp(
            `^sends to it will fail \\(webhook target refused\\): ${localName.replaceAll(".", "\\.")} resolves to a (loopback|private) address; an operator may allow the host with TIDINGS_OUTBOUND_ALLOWED_HOSTS$`,
          ),
        ),
      },
    ]);
    const stored = await request(t.url, "GET", `${PATH}/${res.body.id}`, { headers: bearer(ws.adminKey) });
    expect(stored.body.definition.url).toBe(`http://${localName}:8080/hook`);
    expect(stored.body).not.toHaveProperty("warnings");
  });

  it("`localhost` is refused because it resolves to a loopback address, as a send finds", async () => {
    const res = await put(t, "Localhost", "http://localhost/hook");
    expect(res.body.warnings).toEqual([
      { path: "definition.url", message: expect.stringMatching(/localhost resolves to a loopback address/) },
    ]);
  });

  it("an allow-listed host gets no warning (the same name, on a server that lists it)", async () => {
    const res = await put(allowing, "Allowed name", `http://${localName}:8080/hook`);
    expect(res.status).toBe(200);
    expect(res.body).not.toHaveProperty("warnings");
  });

  it("a name that does not resolve warns that it could not be checked; the PUT still succeeds", async () => {
    const res = await put(t, "Nowhere", "https://no-such-host.invalid/hook");
    expect(res.status).toBe(200);
    expect(res.body.warnings).toEqual([
      {
        path: "definition.url",
        message: expect.stringMatching(
          /^no-such-host\.invalid could not be resolved \(\w+\), so it was not checked against the webhook target guard/,
        ),
      },
    ]);
  });

  it("Liquid in the host is not checked (sends check the rendered URL); Liquid in the path is", async () => {
    const hostLiquid = await put(t, "Liquid host", "https://{{ user.traits.host }}/hook");
    expect(hostLiquid.status).toBe(200);
    expect(hostLiquid.body).not.toHaveProperty("warnings");
    const pathLiquid = await put(t, "Liquid path", "http://localhost/{{ user.id }}");
    expect(pathLiquid.body.warnings).toHaveLength(1);
  });

  it("apply answers the same warnings for each template, with names resolved", async () => {
    const res = await request(t.url, "POST", "/api/admin/apply", {
      headers: bearer(ws.adminKey),
      body: {
        resources: [
          {
            kind: "Template",
            resource: { name: "Applied local", draft: { type: "Webhook", method: "POST", url: `http://${localName}/x` } },
          },
          {
            kind: "Template",
            resource: { name: "Applied public", draft: { type: "Webhook", method: "POST", url: "https://192.0.2.1/x" } },
          },
        ],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.resources[0].warnings).toEqual([{ path: "draft.url", message: expect.stringMatching(/resolves to .*address/) }]);
    expect(res.body.resources[1]).not.toHaveProperty("warnings");
  });
});

describe("webhookWarnings", () => {
  it("a lookup that does not answer in time is a warning after the timeout, never an error", async () => {
    const guard = new OutboundGuard([], { resolver: () => new Promise(() => {}) });
    const started = Date.now();
    const warnings = await webhookWarnings(
      { definition: { type: "Webhook", method: "POST", url: "https://slow.test/hook" } },
      { guard, timeoutMs: 300 },
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(warnings).toEqual([
      { path: "definition.url", message: expect.stringMatching(/^slow\.test could not be resolved within 300 ms/) },
    ]);
  });

  it("a name resolving to a public address among none refused gets no warning; any refused address warns", async () => {
    const resolver = async (host: string) =>
      host === "mixed.test"
        ? [
            { address: "192.0.2.10", family: 4 as const },
            { address: "10.0.0.7", family: 4 as const },
          ]
        : [{ address: host === "listed.test" ? "127.0.0.1" : "192.0.2.10", family: 4 as const }];
    const guard = new OutboundGuard(["listed.test"], { resolver });
    const check = (url: string) => webhookWarnings({ draft: { type: "Webhook", method: "POST", url } }, { guard });
    expect(await check("https://public.test/hook")).toEqual([]);
    expect(await check("https://listed.test/hook")).toEqual([]);
    expect(await check("https://mixed.test/hook")).toEqual([
      { path: "draft.url", message: expect.stringMatching(/mixed\.test resolves to a private address/) },
    ]);
  });
});
