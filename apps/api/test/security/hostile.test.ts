// Hostile and careless admins, one test per hole (docs/security.md), each against a real server and
// database: a workspace cannot stop the process, reach the server's network, move a stored secret,
// hold up another workspace's messages, or silence its own other segments.
import { generateKeyPairSync, randomUUID } from "node:crypto";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { smtpConnection } from "../../src/messaging/channels/email.ts";
import { signUnsubscribeToken } from "../../src/subscription-groups/unsubscribe-token.ts";
import { waitFor } from "../broadcasts/support.ts";
import { identify, segmentWorld, track } from "../segments/support.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { basic, bearer, request } from "../support/http.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { sql } from "../../src/db/sql.ts";

/** Probes /health/live every `everyMs` while `work` runs: each probe's answer time (ms; Infinity without a 200 within 1 s). */
async function probingLiveness<T>(url: string, work: () => Promise<T>, everyMs = 100): Promise<{ value: T; probes: number[] }> {
  const probes: number[] = [];
  let done = false;
  const probing = (async () => {
    while (!done) {
      const started = performance.now();
      const ok = await fetch(`${url}/health/live`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      probes.push(ok ? performance.now() - started : Number.POSITIVE_INFINITY);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    return { value: await work(), probes };
  } finally {
    done = true;
    await probing;
  }
}

/** `levels` And nodes, each of whose two children lead to the level below: 2^levels paths. */
function sharedChildren(levels: number, how: "same child twice" | "two wrappers") {
  const nodes: Record<string, unknown>[] = [{ type: "Trait", id: "n0", path: "plan", operator: { type: "Equals", value: "pro" } }];
  for (let k = 1; k <= levels; k++) {
    if (how === "same child twice") nodes.push({ type: "And", id: `n${k}`, children: [`n${k - 1}`, `n${k - 1}`] });
    else {
      nodes.push({ type: "Or", id: `a${k}`, children: [`n${k - 1}`] }, { type: "Or", id: `b${k}`, children: [`n${k - 1}`] });
      nodes.push({ type: "And", id: `n${k}`, children: [`a${k}`, `b${k}`] });
    }
  }
  const entryNode = nodes.pop()!;
  return { entryNode, nodes };
}

describe("hostile definitions and templates", () => {
  let t: TestApp;
  beforeAll(async () => {
    // A render budget long enough to see that a render running for seconds stalls nothing.
    t = await createTestApp({ render: { threads: 1, timeLimitMs: 3000 } });
  });
  afterAll(() => t?.close());

  it("a segment whose nodes share children is refused at once, linear to check, and the process keeps answering", async () => {
    const w = await segmentWorld(t);
    const put = (definition: unknown) =>
      request(t.url, "PUT", "/api/admin/segments", { headers: bearer(w.ws.adminKey), body: { name: `s-${randomUUID()}`, definition } });
    const { value, probes } = await probingLiveness(t.url, async () => {
      const twice = await put(sharedChildren(40, "same child twice"));
      const wrapped = await put(sharedChildren(12, "two wrappers"));
      const broadcast = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
        headers: bearer(w.ws.adminKey),
        body: {
          broadcastName: `b-${randomUUID()}`,
          segmentDefinition: sharedChildren(40, "same child twice"),
          messageTemplateDefinition: { type: "Sms", body: "hi" },
        },
      });
      return { twice, wrapped, broadcast };
    });
    expect(value.twice.status).toBe(400);
    expect(value.twice.body.error.issues).toContainEqual({
      path: "definition.entryNode.children.1",
      message: 'child "n39" is listed twice; list each child once',
    });
    expect(value.wrapped.status).toBe(400);
    expect(value.wrapped.body.error.issues).toEqual([
      { path: "definition.entryNode", message: expect.stringMatching(/expands to more than 2000 nodes/) },
    ]);
    expect(value.broadcast.status).toBe(400);
    expect(probes.length).toBeGreaterThan(0);
    expect(Math.max(...probes)).toBeLessThan(1000);

    // Within the limits a shared child is compiled once, and the segment is right.
    const shared = await put(sharedChildren(5, "two wrappers"));
    expect(shared.status, shared.text).toBe(200);
    await w.send([identify("pro-user", { plan: "pro" }, Date.now()), identify("free-user", { plan: "free" }, Date.now())]);
    await w.settle();
    expect(await w.members(shared.body.id)).toEqual(["pro-user"]);
  });

  it("a render written to loop for seconds runs off the event loop: probes and ingestion answer within a second, the render is a 400", async () => {
    const loop = "{% for a in (1..3000) %}{% for b in (1..3000) %}{% assign x = b %}{% endfor %}{% endfor %}";
    const headers = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`x-h${i}`, loop]));
    const definition = { type: "Webhook", url: "https://hooks.example.test/h", method: "POST", headers };
    const render = () =>
      request(t.url, "POST", "/api/admin/content/templates/render", {
        headers: bearer(t.workspace.adminKey),
        body: { definition, user: { id: "u1" } },
      });
    const { value, probes } = await probingLiveness(t.url, async () => {
      const rendering = render();
      const ingested: number[] = [];
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const res = await request(t.url, "POST", "/api/public/apps/identify", {
          headers: basic(t.workspace.writeKey),
          body: { userId: `u-${i}`, traits: { n: i } },
        });
        expect(res.status).toBe(204);
        ingested.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 200));
      }
      return { res: await rendering, ingested };
    });
    expect(value.res.status, value.res.text.slice(0, 300)).toBe(400);
    expect(value.res.body.error.issues[0]).toEqual({
      path: expect.stringMatching(/^definition\.headers\.x-h\d+$/),
      message: expect.stringMatching(/limit of the message exceeded/),
    });
    expect(Math.max(...value.ingested)).toBeLessThan(1000);
    expect(probes.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...probes)).toBeLessThan(1000);

    // Maps are bounded; a workspace renders two previews at once, a third is a 429.
    const tooMany = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`x-h${i}`, "v"]));
    const big = await request(t.url, "POST", "/api/admin/content/templates/render", {
      headers: bearer(t.workspace.adminKey),
      body: { definition: { ...definition, headers: tooMany }, user: { id: "u1" } },
    });
    expect(big.status).toBe(400);
    expect(big.body.error.issues[0]).toMatchObject({ path: "definition.headers", message: "at most 50 entries" });
    const three = await Promise.all([render(), render(), render()]);
    expect(three.map((r) => r.status).sort()).toEqual([400, 400, 429]);
  });

  it("a send whose template runs out of its budget fails that delivery with the reason", async () => {
    const w = await segmentWorld(t);
    await w.send([identify("a", { phone: "+15550100" }, Date.now()), identify("b", { phone: "+15550101" }, Date.now())]);
    const slow = "{% for a in (1..3000) %}{% for b in (1..3000) %}{% assign x = b %}{% endfor %}{% endfor %}";
    const started = await w.admin("POST", "/api/admin/broadcasts/execute", {
      broadcastName: `b-${randomUUID()}`,
      segmentDefinition: { entryNode: { type: "Everyone", id: "e" }, nodes: [] },
      messageTemplateDefinition: { type: "Sms", body: `${slow}${slow}` },
    });
    const deliveries = await waitFor(
      async () => (await w.admin("GET", `/api/admin/deliveries?broadcastId=${started.broadcastId}`)).items as any[],
      (ds) => ds.length === 2 && ds.every((d) => d.status !== "Queued" && d.status !== "Sending"),
      20_000,
    );
    for (const d of deliveries) {
      expect(d.status).toBe("Failed");
      // Liquid's own limit, or, on a machine so loaded that the thread's deadline comes first, the pool's.
      expect(d.reason).toMatch(
        /^render error: (definition\.body: Liquid error: .*limit of the message exceeded|ran past its \d+ ms time budget)/,
      );
    }
  });
});

describe("providers pointed at the server's own network", () => {
  let t: TestApp;
  let listener: net.Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    listener = net.createServer((socket) => {
      connections++;
      socket.end("220 internal.service ESMTP secret-banner\r\n");
    });
    await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
    port = (listener.address() as net.AddressInfo).port;
    t = await createTestApp(); // no allow-list
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((r) => listener.close(r));
  });

  it("are saved with a warning, their sends fail with the reason, and nothing connects to the loopback listener", async () => {
    const w = await segmentWorld(t);
    const put = async (body: Record<string, unknown>) => {
      const res = await request(t.url, "PUT", "/api/admin/providers", { headers: bearer(w.ws.adminKey), body });
      expect(res.status, res.text).toBe(200);
      return res.body.warnings as { path: string; message: string }[];
    };
    const loopback = `http://127.0.0.1:${port}`;
    expect(
      await put({
        channel: "Sms",
        type: "Twilio",
        config: { accountSid: "AC1", authToken: "tok", fromNumber: "+15550100", baseUrl: loopback },
      }),
    ).toEqual([{ path: "config.baseUrl", message: expect.stringMatching(/127\.0\.0\.1 is a loopback address/) }]);
    expect(await put({ channel: "MobilePush", type: "Expo", config: { baseUrl: loopback } })).toEqual([
      { path: "config.baseUrl", message: expect.stringMatching(/loopback address/) },
    ]);
    expect(await put({ channel: "Email", type: "Smtp", config: { host: "127.0.0.1", port, from: "a@acme.test" } })).toEqual([
      { path: "config.host", message: expect.stringMatching(new RegExp(`port ${port} is not an SMTP port`)) },
    ]);

    await w.send([identify("victim", { phone: "+15550101", expoPushToken: "ExponentPushToken[abc]", email: "v@acme.test" }, Date.now())]);
    const templates = [
      { type: "Sms", body: "hi" },
      { type: "MobilePush", title: "t", body: "b" },
      { type: "Email", from: "a@acme.test", subject: "s", body: "<p>b</p>" },
    ];
    const ids: string[] = [];
    for (const messageTemplateDefinition of templates) {
      const b = await w.admin("POST", "/api/admin/broadcasts/execute", {
        broadcastName: `b-${randomUUID()}`,
        segmentDefinition: { entryNode: { type: "Everyone", id: "e" }, nodes: [] },
        messageTemplateDefinition,
      });
      ids.push(b.broadcastId);
    }
    for (const id of ids) {
      const [d] = await waitFor(
        async () => (await w.admin("GET", `/api/admin/deliveries?broadcastId=${id}`)).items as any[],
        (ds) => ds.length === 1 && ds[0].status === "Failed",
      );
      expect(d.reason).toMatch(/refused/);
      expect(d.reason).not.toContain("secret-banner");
    }

    // FCM's token endpoint comes from the uploaded key file: it is a destination too.
    const fcm = await t.newWorkspace();
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const serviceAccountJson = JSON.stringify({
      client_email: "x@p.iam.gserviceaccount.com",
      private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
      token_uri: `${loopback}/token`,
    });
    const fcmPut = await request(t.url, "PUT", "/api/admin/providers", {
      headers: bearer(fcm.adminKey),
      body: { channel: "MobilePush", type: "Fcm", config: { projectId: "p", serviceAccountJson } },
    });
    expect(fcmPut.body.warnings).toEqual([
      { path: "config.serviceAccountJson.token_uri", message: expect.stringMatching(/loopback address/) },
    ]);
    await request(t.url, "POST", "/api/public/apps/identify", {
      headers: basic(fcm.writeKey),
      body: { userId: "d", traits: { deviceToken: "tok" } },
    });
    const fb = await request(t.url, "POST", "/api/admin/broadcasts/execute", {
      headers: bearer(fcm.adminKey),
      body: {
        broadcastName: "fcm",
        segmentDefinition: { entryNode: { type: "Everyone", id: "e" }, nodes: [] },
        messageTemplateDefinition: { type: "MobilePush", title: "t", body: "b" },
      },
    });
    const [fd] = await waitFor(
      async () =>
        (await request(t.url, "GET", `/api/admin/deliveries?broadcastId=${fb.body.broadcastId}`, { headers: bearer(fcm.adminKey) })).body
          .items as any[],
      (ds) => ds.length === 1 && ds[0].status === "Failed",
    );
    expect(fd.reason).toMatch(/FCM token exchange: destination refused/);
    expect(connections).toBe(0);
  });

  it("NAT64 and 6to4 addresses are not public either", async () => {
    const w = await segmentWorld(t);
    for (const host of ["[64:ff9b::7f00:1]", "[64:ff9b:1::a00:1]", "[2002:7f00:1::1]"]) {
      const res = await request(t.url, "PUT", "/api/admin/providers", {
        headers: bearer(w.ws.adminKey),
        body: { channel: "MobilePush", type: "Expo", config: { baseUrl: `http://${host}/` } },
      });
      expect(res.body.warnings, host).toEqual([{ path: "config.baseUrl", message: expect.stringMatching(/(NAT64|6to4) address/) }]);
    }
  });
});

describe("stored secrets", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const keyFile = JSON.stringify({
    client_email: "x@p.iam.gserviceaccount.com",
    private_key: privateKey.export({ type: "pkcs8", format: "pem" }),
  });
  const cases = [
    {
      type: "Twilio",
      channel: "Sms",
      config: { accountSid: "AC1", authToken: "stored-token", fromNumber: "+15550100", baseUrl: "https://api.twilio.test" },
      moves: { baseUrl: "https://evil.test", accountSid: "AC2" },
      secret: "authToken",
    },
    {
      type: "Expo",
      channel: "MobilePush",
      config: { accessToken: "stored-token", baseUrl: "https://exp.test" },
      moves: { baseUrl: "https://evil.test" },
      secret: "accessToken",
    },
    {
      type: "Fcm",
      channel: "MobilePush",
      config: { projectId: "p1", serviceAccountJson: keyFile, baseUrl: "https://fcm.test" },
      moves: { projectId: "p2", baseUrl: "https://evil.test" },
      secret: "serviceAccountJson",
    },
    {
      type: "Smtp",
      channel: "Email",
      config: { host: "smtp.acme.test", port: 587, username: "u", password: "stored-password" },
      moves: { host: "evil.test", port: 25 },
      secret: "password",
    },
  ] as const;

  it.each(cases)("a $type secret does not follow a changed destination: 400 naming the field, nothing changed", async (c) => {
    const ws = await t.newWorkspace();
    const put = (config: Record<string, unknown>) =>
      request(t.url, "PUT", "/api/admin/providers", { headers: bearer(ws.adminKey), body: { channel: c.channel, type: c.type, config } });
    expect((await put(c.config)).status).toBe(200);
    for (const [field, value] of Object.entries(c.moves)) {
      const moved = await put({ [field]: value });
      expect(moved.status).toBe(400);
      expect(moved.body.error.issues).toEqual([
        { path: `config.${field}`, message: expect.stringContaining(`stored ${c.secret} to a new destination`) },
      ]);
      // Sent back masked, the secret is still the stored one: the same refusal.
      const masked = (await request(t.url, "GET", "/api/admin/providers", { headers: bearer(ws.adminKey) })).body.items[0].config;
      expect((await put({ ...masked, [field]: value })).status).toBe(400);
    }
    const stored = (await request(t.url, "GET", "/api/admin/providers", { headers: bearer(ws.adminKey) })).body.items[0];
    for (const [field, value] of Object.entries(c.config)) if (field !== c.secret) expect(stored.config[field]).toEqual(value);
    // With the secret sent again, the destination may change.
    const resent = await put({ ...c.moves, [c.secret]: (c.config as Record<string, unknown>)[c.secret] });
    expect(resent.status, resent.text).toBe(200);
  });

  it("SMTP credentials go over TLS only (STARTTLS required) unless the host is allow-listed", () => {
    const config = { host: "smtp.acme.test", port: 587, username: "u", password: "p" };
    expect(smtpConnection(config, "192.0.2.1", false)).toMatchObject({ host: "192.0.2.1", servername: "smtp.acme.test", requireTLS: true });
    expect(smtpConnection(config, "192.0.2.1", true)).not.toHaveProperty("requireTLS");
    expect(smtpConnection({ ...config, port: 465 }, "192.0.2.1", false)).toMatchObject({ secure: true });
    expect(smtpConnection({ host: "smtp.acme.test", port: 587 }, "192.0.2.1", false)).not.toHaveProperty("requireTLS");
  });
});

describe("two workspaces with the same ids", () => {
  let t: TestApp;
  let receiver: Receiver;
  const arrived = new Map<string, number>();
  beforeAll(async () => {
    receiver = await startReceiver((r, res) => {
      if (r.path === "/slow") setTimeout(() => res.writeHead(200).end(), 5000);
      else {
        arrived.set(JSON.parse(r.body).user, performance.now());
        res.writeHead(200).end();
      }
    });
    t = await createTestApp({ outboundAllowedHosts: ["127.0.0.1"] });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it("their senders' job keys are distinct (a shared key would merge one workspace's senders into the other's)", async () => {
    const id = randomUUID();
    const [a, b] = [await t.newWorkspace(), await t.newWorkspace()];
    const client = await t.ctx.db.pool.connect();
    try {
      await client.query("BEGIN");
      const none = sql`SELECT NULL::text AS user_id, NULL AS channel, NULL::uuid AS template_id, NULL::uuid AS subscription_group_id,
        NULL::jsonb AS context, NULL::uuid AS run_id, NULL::text AS node_id, NULL::text AS category, NULL::text AS hold_action,
        NULL::timestamptz AS due_at WHERE false`;
      for (const ws of [a, b]) {
        await client.query(t.ctx.sends.queueStatement("journey", ws.id, id, none));
        for (const q of t.ctx.sends.wakeQueries("journey", ws.id, id, false)) await client.query(q);
      }
      const { rows } = await client.query(
        "SELECT count(DISTINCT key)::int AS n FROM graphile_worker.jobs WHERE key LIKE '%' || $1 || '%'",
        [id],
      );
      expect(rows[0].n).toBe(8);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });

  it("one sending to an endpoint that answers in 5 s does not hold up the other's messages", { timeout: 60_000 }, async () => {
    const templateId = randomUUID();
    const journeyId = randomUUID();
    const setUp = async (path: string) => {
      const w = await segmentWorld(t);
      await w.admin("PUT", "/api/admin/content/templates", {
        id: templateId,
        name: "hook",
        definition: { type: "Webhook", url: `${receiver.url}${path}`, method: "POST", body: '{"user":"{{ user.id }}"}' },
      });
      await w.admin("PUT", "/api/admin/journeys", {
        id: journeyId,
        name: "welcome",
        status: "Running",
        definition: {
          entryNode: { type: "EventEntryNode", event: "Signed Up", child: "m" },
          nodes: [{ id: "m", type: "MessageNode", channel: "Webhook", templateId, child: "ExitNode" }],
        },
      });
      return w;
    };
    const a = await setUp("/slow");
    const b = await setUp("/fast");
    const signUp = (w: Awaited<ReturnType<typeof setUp>>, users: string[]) =>
      w.send(users.map((u) => track({ userId: u }, "Signed Up", Date.now())));
    await signUp(
      a,
      Array.from({ length: 600 }, (_, i) => `a-${i}`),
    );
    // A's senders are at its provider, waiting.
    await waitFor(
      async () => (await a.admin("GET", `/api/admin/deliveries?journeyId=${journeyId}&status=Sending&limit=1`)).items.length,
      (n) => n > 0,
    );
    const sent = performance.now();
    const bUsers = Array.from({ length: 10 }, (_, i) => `b-${i}`);
    await signUp(b, bUsers);
    await waitFor(
      async () => bUsers.filter((u) => arrived.has(u)).length,
      (n) => n === bUsers.length,
      10_000,
    );
    const latest = Math.max(...bUsers.map((u) => arrived.get(u)! - sent));
    expect(latest).toBeLessThan(2000);
    // Each workspace's journey sent to its own endpoint only.
    expect([...arrived.keys()].every((u) => u.startsWith("b-"))).toBe(true);
  });
});

describe("a definition failing at evaluation", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it("is refused at PUT when its numbers are out of range, and once stored is set aside: the workspace's other segments stay current", async () => {
    const w = await segmentWorld(t);
    const absolute = (absoluteTimestamp: number) => ({
      entryNode: { type: "Trait", id: "t", path: "since", operator: { type: "AbsoluteTimestamp", absoluteTimestamp, direction: "after" } },
      nodes: [],
    });
    const refused = await request(t.url, "PUT", "/api/admin/segments", {
      headers: bearer(w.ws.adminKey),
      body: { name: "far", definition: absolute(9e15) },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.issues[0].path).toBe("definition.entryNode.operator.absoluteTimestamp");

    // As an older release stored it.
    const poisoned = await w.segment(absolute(1_700_000_000_000) as never, "poisoned");
    await t.ctx.db.pool.query(
      `UPDATE segments SET definition = jsonb_set(definition, '{entryNode,operator,absoluteTimestamp}', '9e15'), definition_updated_at = now()
       WHERE id = $1`,
      [poisoned],
    );
    // And one whose evaluation PostgreSQL refuses (a data exception in its statement).
    const refusing = await w.segment({ entryNode: { type: "Everyone", id: "e" }, nodes: [] }, "refusing");
    await t.ctx.db.pool.query(
      `CREATE FUNCTION refuse_segment() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'value out of range for this segment' USING ERRCODE = '22003'; END $$;
       CREATE TRIGGER refuse_segment BEFORE INSERT ON segment_memberships FOR EACH ROW
         WHEN (NEW.segment_id = '${refusing}'::uuid) EXECUTE FUNCTION refuse_segment();`,
    );
    const plain = await w.segment(
      { entryNode: { type: "Trait", id: "p", path: "plan", operator: { type: "Equals", value: "pro" } }, nodes: [] },
      "pro",
    );
    await w.send([identify("ada", { plan: "pro" }, Date.now())]);
    const members = await waitFor(
      () => w.members(plain),
      (m) => m.length === 1,
      10_000,
    );
    expect(members).toEqual(["ada"]);

    const failing = await waitFor(
      async () => [await w.admin("GET", `/api/admin/segments/${poisoned}`), await w.admin("GET", `/api/admin/segments/${refusing}`)],
      (both) => both.every((s) => s.failing),
    );
    expect(failing[0].failing).toMatchObject({ reason: expect.stringMatching(/absoluteTimestamp/), failures: expect.any(Number) });
    expect(failing[1].failing).toMatchObject({ reason: "value out of range for this segment" });
    expect(failing[1].failing.retryAt).toBeGreaterThan(failing[1].failing.since);
    const metrics = (await request(t.url, "GET", "/metrics")).text;
    expect(metrics).toMatch(/^tidings_definitions_failing\{kind="segment"\} 2$/m);

    // Fixed (the trigger gone) and saved again, it is recomputed at once and no longer failing.
    await t.ctx.db.pool.query("DROP TRIGGER refuse_segment ON segment_memberships; DROP FUNCTION refuse_segment()");
    await w.admin("PUT", "/api/admin/segments", {
      id: refusing,
      name: "refusing",
      definition: { entryNode: { type: "Everyone", id: "all" }, nodes: [] },
    });
    const fixed = await waitFor(
      () => w.admin("GET", `/api/admin/segments/${refusing}`),
      (s) => !s.failing && s.memberCount === 1,
      10_000,
    );
    expect(fixed.failing).toBeUndefined();
  });
});

describe("a journey failing as it advances", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it("is set aside with the reason while the workspace's other journeys go on", async () => {
    const w = await segmentWorld(t);
    const template = await w.admin("PUT", "/api/admin/content/templates", { name: "sms", definition: { type: "Sms", body: "hi" } });
    // Each run waits a second before its message: a run is moved at its start as far as it goes at
    // once (entries.ts), so the move that fails is the runtime's advance of a started run.
    const journey = (name: string) =>
      w.admin("PUT", "/api/admin/journeys", {
        name,
        status: "Running",
        definition: {
          entryNode: { type: "EventEntryNode", event: "Go", child: "d" },
          nodes: [
            { id: "d", type: "DelayNode", variant: { type: "Second", seconds: 1 }, child: "m" },
            { id: "m", type: "MessageNode", channel: "Sms", templateId: template.id, child: "ExitNode" },
          ],
        },
      });
    const bad = await journey("refused");
    const good = await journey("fine");
    // PostgreSQL refuses to move the runs of one journey (a data exception in its statement).
    await t.ctx.db.pool.query(
      `CREATE FUNCTION refuse_runs() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'value out of range for this journey' USING ERRCODE = '22003'; END $$;
       CREATE TRIGGER refuse_runs BEFORE UPDATE ON journey_runs FOR EACH ROW
         WHEN (OLD.journey_id = '${bad.id}'::uuid) EXECUTE FUNCTION refuse_runs();`,
    );
    try {
      await w.send([track({ userId: "ada" }, "Go", Date.now())]);
      const runs = await waitFor(
        async () => (await w.admin("GET", `/api/admin/journeys/${good.id}/runs`)).items as any[],
        (rs) => rs.length === 1 && rs[0].status === "Completed",
        10_000,
      );
      expect(runs[0].userId).toBe("ada");
      const failing = await waitFor(
        () => w.admin("GET", `/api/admin/journeys/${bad.id}`),
        (j) => j.failing !== undefined,
      );
      expect(failing.failing).toMatchObject({ reason: "value out of range for this journey", failures: expect.any(Number) });
      expect((await request(t.url, "GET", "/metrics")).text).toMatch(/^tidings_definitions_failing\{kind="journey"\} 1$/m);
    } finally {
      await t.ctx.db.pool.query("DROP TRIGGER refuse_runs ON journey_runs; DROP FUNCTION refuse_runs()");
    }
  });
});

describe("the small holes", () => {
  let t: TestApp;
  const logged: string[] = [];
  beforeAll(async () => {
    t = await createTestApp({ logLevel: "info", logStream: { write: (line) => logged.push(line) } });
  });
  afterAll(() => t?.close());

  it("an unsubscribe link's token is not in the request log, and the link used after the user's erasure writes nothing", async () => {
    const w = await segmentWorld(t);
    const group = await w.admin("PUT", "/api/admin/subscription-groups", { name: "news", channel: "Email", type: "OptOut" });
    await w.send([identify("gone", { email: "gone@acme.test" }, Date.now())]);
    const token = signUnsubscribeToken(t.ctx.config.secretKey, { workspaceId: w.ws.id, userId: "gone", subscriptionGroupId: group.id });
    await w.admin("DELETE", "/api/admin/users/gone");

    const page = await request(t.url, "GET", `/api/public/subscriptions/unsubscribe?token=${encodeURIComponent(token)}`);
    expect(page.status).toBe(200);
    const confirm = await request(t.url, "POST", `/api/public/subscriptions/unsubscribe?token=${encodeURIComponent(token)}`);
    expect(confirm.status).toBe(200);
    const { pool } = t.ctx.db;
    const rows = async (table: string) =>
      (await pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE workspace_id = $1 AND profile_id = 'gone'`, [w.ws.id])).rows[0].n;
    expect(await rows("subscription_assignments")).toBe(0);
    expect(await rows("profiles")).toBe(0);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM segment_outbox WHERE workspace_id = $1 AND 'gone' = ANY(ids)", [w.ws.id])).rows[0]
        .n,
    ).toBe(0);

    const lines = logged.filter((l) => l.includes("/api/public/subscriptions/unsubscribe"));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) {
      expect(line).not.toContain(token);
      expect(line).not.toContain(encodeURIComponent(token));
      expect(line).toContain("/api/public/subscriptions/unsubscribe?token=…");
    }
  });
});
